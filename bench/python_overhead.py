"""The Python layer's overhead (issue 29, BENCHMARKS.md "Python"): JSON lines on stdout.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--attn build/attn] [--threads 1] [--rounds 9]

1. translate: 512 sentences of the tests' toy task (python/tests/conftest.py; its
   rnnsearch trained here for 150 steps), beam 5, batch 64 (8 batches), through
   Translator.translate (the model loaded once) and through `attn translate`; the
   command's time is its wall time minus that of the same command on as many empty
   lines (process start, model load and weight preparation, which a Python session
   pays once), so both sides time the same decoding.
2. fused attention, q, k, v [4, 8, 128, 64]: attn.scaled_dot_product_attention
   forward, and forward + backward (grad_output=), against the same C++ call
   (attention::sdpa_fused) timed by build/attn_sdpa_timing (python/bench/), each
   the median of 100 calls after one.
The two sides alternate, round by round, so a disturbance of this shared machine
lands on both; each round prints one line, then one line of medians."""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attn  # before NumPy: attn chooses OpenBLAS's core (attn/__init__.py)
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python" / "tests"))
from conftest import reversal_corpus, write_toy_config  # noqa: E402  (the tests' toy task)


def median_ms(fn, reps, warmup=1):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(reps):
        a = time.perf_counter()
        fn()
        t.append((time.perf_counter() - a) * 1e3)
    return statistics.median(t)


def cli_ms(cmd, stdin):
    a = time.perf_counter()
    subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=True)
    return (time.perf_counter() - a) * 1e3


def translate_round(args, run, lines, translator):
    cmd = [args.attn, "translate", "-m", str(run), "-b", "5", "--batch", "64", "--threads", str(args.threads)]
    full = cli_ms(cmd, "\n".join(lines) + "\n")
    empty = cli_ms(cmd, "\n" * len(lines))
    a = time.perf_counter()
    translator.translate(lines, beam=5, batch=64)
    py = (time.perf_counter() - a) * 1e3
    return {"bench": "python_overhead", "what": "translate", "sentences": len(lines), "beam": 5, "batch": 64,
            "threads": args.threads, "cli_ms": full - empty, "cli_total_ms": full, "cli_empty_ms": empty,
            "python_ms": py, "python_vs_cli": py / (full - empty), "blas_core": attn._blas()["core"]}


def attention_round(args):
    out = subprocess.run([args.sdpa_timing, "4", "8", "128", "64", str(args.threads), "100"], capture_output=True,
                         text=True, check=True).stdout
    cpp = json.loads(out)
    rng = np.random.default_rng(1)
    q, k, v, g = (rng.standard_normal((4, 8, 128, 64)).astype(np.float32) for _ in range(4))
    fwd = median_ms(lambda: attn.scaled_dot_product_attention(q, k, v), 100)
    fwdbwd = median_ms(lambda: attn.scaled_dot_product_attention(q, k, v, grad_output=g), 100)
    return {"bench": "python_overhead", "what": "sdpa_fused", "shape": [4, 8, 128, 64], "threads": args.threads,
            "cpp_fwd_ms": cpp["fwd_ms"], "python_fwd_ms": fwd, "fwd_python_vs_cpp": fwd / cpp["fwd_ms"],
            "cpp_fwdbwd_ms": cpp["fwdbwd_ms"], "python_fwdbwd_ms": fwdbwd,
            "fwdbwd_python_vs_cpp": fwdbwd / cpp["fwdbwd_ms"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--attn", default=str(REPO / "build" / "attn"))
    p.add_argument("--sdpa-timing", default=str(REPO / "build" / "attn_sdpa_timing"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=9)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        attn.train(str(write_toy_config(d)), progress=None)
        run = Path(d) / "run"
        lines = reversal_corpus(512, 11)[0]
        translator = attn.Translator(str(run), threads=args.threads)
        translator.translate(lines[:64], beam=5)  # first-call costs (weights prepared for 64 x 5 rows)
        rounds = {"translate": [], "sdpa_fused": []}
        for _ in range(args.rounds):
            for what, fn in (("translate", lambda: translate_round(args, run, lines, translator)),
                             ("sdpa_fused", lambda: attention_round(args))):
                j = fn()
                rounds[what].append(j)
                print(json.dumps(j), flush=True)
    for what, keys in (("translate", ["python_vs_cli"]), ("sdpa_fused", ["fwd_python_vs_cpp", "fwdbwd_python_vs_cpp"])):
        print(json.dumps({"bench": "python_overhead", "what": what, "rounds": args.rounds,
                          **{f"median_{k}": statistics.median(r[k] for r in rounds[what]) for k in keys}}), flush=True)


if __name__ == "__main__":
    main()
