"""attn.train: the real trainer (its progress lines, overrides as --set), and
Ctrl-C: a checkpoint, then KeyboardInterrupt, and a resumable run."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import attn
from conftest import write_toy_config

CHILD = """
import sys, attn
try:
    attn.train(sys.argv[1], {"train.max_steps": 100000, "train.log_every": 5},
               progress=lambda line: print(line, flush=True))
    print("finished")
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
"""


def test_overrides_and_progress_lines(tmp_path):
    lines = []
    s = attn.train(str(write_toy_config(tmp_path)), {"train.max_steps": 10, "train.log_every": 5,
                                                    "train.out_dir": str(tmp_path / "r")}, progress=lines.append)
    assert s["completed"] and s["steps"] == 10 and s["stop_reason"] == "max_steps"
    assert any(line.startswith("step      5") for line in lines), lines
    assert (tmp_path / "r" / "model.safetensors").exists()


def test_bad_overrides_name_the_key(tmp_path):
    cfg = str(write_toy_config(tmp_path))
    with pytest.raises(ValueError, match="train.nope"):
        attn.train(cfg, {"train.nope": 1}, progress=None)
    with pytest.raises(ValueError, match="train.lr"):
        attn.train(cfg, {"train.lr": "fast"}, progress=None)
    with pytest.raises(RuntimeError, match="missing.yaml"):
        attn.train(str(tmp_path / "missing.yaml"))


def test_ctrl_c_checkpoints_raises_keyboard_interrupt_and_resumes(tmp_path):
    cfg = write_toy_config(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    for line in p.stdout:  # training has started: its first progress line of a step
        if line.startswith("step"):
            break
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert out.strip().endswith("KeyboardInterrupt"), out + err
    assert "finished" not in out
    run = tmp_path / "run"
    assert (run / "checkpoint").is_dir()
    resumed = attn.train(str(cfg), {"train.max_steps": 10000}, resume=True, stop_after_steps=3, progress=None)
    assert not resumed["completed"] and resumed["steps"] > 3
