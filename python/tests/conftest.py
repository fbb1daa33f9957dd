"""Fixtures of the Python module's tests (python/tests): the `attn` command
beside the module (for the CLI-equal checks) and a tiny translation run trained
once per session through attn.train (the C++ tests' toy task, tests/toy_run.h:
English words reversed into French, a small rnnsearch, 150 steps on one thread).

Run from the repository: PYTHONPATH=build/python /usr/bin/python3 -m pytest python/tests
(ATTN_CLI names the command when it is not build/attn)."""
import os
import random
import subprocess
from pathlib import Path

import pytest

import attn

REPO = Path(__file__).resolve().parents[2]

EN = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "red", "blue",
      "green", "black", "white", "cat", "dog", "bird", "fish", "house", "car", "tree", "sun", "moon"]
FR = ["un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix", "rouge", "bleu",
      "vert", "noir", "blanc", "chat", "chien", "oiseau", "poisson", "maison", "voiture", "arbre", "soleil", "lune"]


def reversal_corpus(n, seed):
    """n pairs: 3 to 7 English words, their French words in reverse order."""
    rng = random.Random(seed)
    src, tgt = [], []
    for _ in range(n):
        w = [rng.randrange(24) for _ in range(3 + rng.randrange(5))]
        src.append(" ".join(EN[x] for x in w) + " .")
        tgt.append(" ".join(FR[x] for x in reversed(w)) + " .")
    return src, tgt


def write_lines(path, lines):
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


TOY_CONFIG = """data:
  train_src: {d}/train.en
  train_tgt: {d}/train.fr
  valid_src: {d}/valid.en
  valid_tgt: {d}/valid.fr
vocab:
  size: 80
model:
  type: rnnsearch
  embed: 32
  encoder_hidden: 32
  decoder_hidden: 64
  attention: 32
  readout: 32
train:
  out_dir: {d}/run
  max_tokens: 800
  lr: 0.003
  max_epochs: 0
  max_steps: 150
  valid_every: 0
  log_every: 20
  threads: 1
"""


def write_toy_config(d):
    """The toy corpora and config in directory d; returns the config's path."""
    d = Path(d)
    for name, n, seed in (("train", 400, 1), ("valid", 20, 2)):
        src, tgt = reversal_corpus(n, seed)
        write_lines(d / f"{name}.en", src)
        write_lines(d / f"{name}.fr", tgt)
    cfg = d / "run.yaml"
    cfg.write_text(TOY_CONFIG.format(d=d), encoding="utf-8")
    return cfg


@pytest.fixture(scope="session")
def attn_cli():
    cli = Path(os.environ.get("ATTN_CLI", REPO / "build" / "attn"))
    assert cli.exists(), f"{cli}: the attn command is needed to compare with (set ATTN_CLI)"
    return cli


def run_cli(cli, args, stdin=""):
    r = subprocess.run([str(cli), *args], input=stdin, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="session")
def toy_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("toy")
    summary = attn.train(str(write_toy_config(d)), progress=None)
    assert summary["completed"] and summary["steps"] == 150, summary
    return d / "run"


@pytest.fixture(scope="session")
def toy_sentences():
    return reversal_corpus(12, 7)[0] + ["", "one two three four five six seven ."]
