"""PyTorch peers for attn_bench_attention, measured the way PEERS.md asks.

Run with Debian's python and the environment PEERS.md prescribes:
  LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 OPENBLAS_THREAD_TIMEOUT=4 \
  OMP_WAIT_POLICY=passive /usr/bin/python3 bench/attention_peer.py [--threads 2] [--lens 32,128,512,2048] [--additive]
Prints JSON lines with the same fields as attn_bench_attention:
  {"bench":"attention","impl":"torch-manual",...}  manual attention: softmax(q k^T / sqrt(d)) v
  {"bench":"additive_step","impl":"torch-cached"|"torch-projected",...}  Bahdanau step
Medians of >= 10 calls after warm-up (3 for the largest shapes).
"""
import argparse
import json
import math
import statistics
import time

import torch


def median_ms(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def manual_attention(q, k, v, causal):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        L, S = s.shape[-2], s.shape[-1]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


def bench_attention(B, H, L, D, causal, threads, reps):
    q, k, v = (torch.randn(B, H, L, D) for _ in range(3))
    g = torch.randn(B, H, L, D)
    with torch.no_grad():
        fwd = median_ms(lambda: manual_attention(q, k, v, causal), reps)
    qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))

    def step():
        manual_attention(qq, kk, vv, causal).backward(g)
        qq.grad = kk.grad = vv.grad = None

    fb = median_ms(step, reps)
    flops = 4.0 * B * H * L * L * D * (0.5 if causal else 1.0)
    print(json.dumps({"bench": "attention", "impl": "torch-manual", "B": B, "H": H, "Lq": L, "Lk": L, "D": D,
                      "causal": causal, "threads": threads, "fwd_ms": round(fwd, 3), "fwdbwd_ms": round(fb, 3),
                      "gflops": round(flops / (fwd * 1e6), 1)}), flush=True)


def bench_additive(B, Lk, Qd, A, Dv, threads, reps):
    query = torch.randn(B, Qd)
    keys = torch.randn(B, Lk, Dv)
    values = keys
    W1 = torch.nn.Linear(Qd, A, bias=False)
    W2 = torch.nn.Linear(Dv, A)
    v = torch.nn.Linear(A, 1, bias=False)
    lengths = torch.tensor([Lk - b % 7 for b in range(B)])
    pad = torch.arange(Lk)[None, :] >= lengths[:, None]

    def step(kp):
        e = v(torch.tanh(W1(query)[:, None, :] + kp)).squeeze(-1)
        a = torch.softmax(e.masked_fill(pad, float("-inf")), -1)
        return torch.bmm(a[:, None, :], values).squeeze(1), a

    for impl in ("torch-projected", "torch-cached"):
        with torch.no_grad():
            kp = W2(keys)
            f = (lambda: step(W2(keys))) if impl == "torch-projected" else (lambda: step(kp))
            fwd = median_ms(f, reps)
        print(json.dumps({"bench": "additive_step", "impl": impl, "B": B, "Lk": Lk, "q_dim": Qd, "attn_dim": A,
                          "v_dim": Dv, "threads": threads, "fwd_ms": round(fwd, 3)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lens", default="32,128,512,2048")
    ap.add_argument("--additive", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for L in map(int, a.lens.split(",")):
        for causal in (False, True):
            work = 32 * L * L
            bench_attention(4, 8, L, 64, causal, a.threads, 3 if work > 1e8 else 10)
    if a.additive:
        bench_additive(64, 50, 1024, 512, 1024, a.threads, 21)


if __name__ == "__main__":
    main()
