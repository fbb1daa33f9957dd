"""PyTorch peer for bench/gru_bench.cpp: one GRU layer (batch-first,
unidirectional), forward and forward+backward, median of N runs after warm-up.

Run it in PyTorch's best configuration on this machine (see shared/PEERS.md):
  LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 \
  OPENBLAS_THREAD_TIMEOUT=4 OMP_WAIT_POLICY=passive /usr/bin/python3 bench/torch_gru.py
Prints one JSON line, the same keys as attn_bench_gru.
"""
import argparse
import json
import statistics
import time

import torch


def bench(batch, hidden, seq_len, threads, runs, warmup):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    gru = torch.nn.GRU(hidden, hidden, batch_first=True)
    x = torch.randn(batch, seq_len, hidden, requires_grad=True)
    g = torch.randn(batch, seq_len, hidden)  # d(loss)/d(output): a fixed random functional

    def fwd():
        y, h = gru(x)
        return y

    def fwdbwd():
        gru.zero_grad(set_to_none=True)
        x.grad = None
        y, h = gru(x)
        y.backward(g)

    def median_ms(fn):
        for _ in range(warmup):
            fn()
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)

    fwd_ms = median_ms(fwd)
    fwdbwd_ms = median_ms(fwdbwd)
    return {"bench": "gru", "impl": "torch", "batch": batch, "hidden": hidden, "seq_len": seq_len,
            "threads": threads, "fwd_ms": round(fwd_ms, 3), "fwdbwd_ms": round(fwdbwd_ms, 3)}


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--seq-len", type=int, default=30)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    print(json.dumps(bench(a.batch, a.hidden, a.seq_len, a.threads, a.runs, a.warmup)))
