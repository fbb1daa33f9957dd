#!/usr/bin/env python3
"""A model of data-parallel training's speed-up (BENCHMARKS.md, "Data-parallel training").

  bench/data_parallel_model.py --params P --step-ms T1 --bucket-mb 8 [--backward-share 0.67]

Same global batch on p ranks (attn's rule: the batch does not grow with p), so
each rank computes T1 / p (assumed linear: a rank's shard of a 4096-token batch
at p = 64 is 64 tokens, whose products run below the machine's GEMM rate, so
this is an upper bound). The gradient, S = 4 P bytes, is summed by a ring
allreduce per bucket of b bytes:
    t(bucket) = 2 (p - 1) alpha + 2 (p - 1) / p * b / B
(alpha the latency of one message, B the link's bandwidth in bytes/s).
Without overlap every sum waits for the end of the backward pass:
    step(p) = T1 / p + sum over buckets t(bucket)
With overlap every bucket but the last starts during the backward pass
(T_bwd = backward_share T1 / p) and is hidden up to its length; the last
bucket (the embeddings, finished by the pass's last node) never is:
    step(p) = T1 / p + max(0, sum_{but last} t - T_bwd) + t(last)
speed-up(p) = T1 / step(p). Prints one JSON line per (p, network, overlap).
"""
import argparse
import json
import math


def ring(p, nbytes, alpha, bandwidth):
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * nbytes / bandwidth


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", type=float, required=True, help="parameters (floats in the gradient)")
    ap.add_argument("--step-ms", type=float, required=True, help="1 rank's step time on the global batch, ms")
    ap.add_argument("--bucket-mb", type=float, default=8)
    ap.add_argument("--backward-share", type=float, default=2 / 3, help="share of a step in the backward pass")
    ap.add_argument("--ranks", default="2,8,64")
    ap.add_argument("--local-allreduce-ms", type=float,
                    help="measured allreduce of the whole gradient on 2 ranks of this machine "
                         "(bench/allreduce_time.c): adds this machine's shared memory as a network, "
                         "its bandwidth S / t (a 2-rank ring moves S), latency 1 us")
    args = ap.parse_args()
    nbytes = 4 * args.params
    bucket = args.bucket_mb * (1 << 20)
    sizes = [bucket] * int(nbytes // bucket)
    if nbytes - sum(sizes) > 0:
        sizes.append(nbytes - sum(sizes))
    t1 = args.step_ms / 1e3
    # name, bandwidth in bytes/s, latency per message in s
    networks = [("10 Gbit/s TCP", 10e9 / 8, 30e-6), ("100 Gbit/s", 100e9 / 8, 5e-6)]
    if args.local_allreduce_ms:
        networks.insert(0, ("this machine, shared memory", nbytes / (args.local_allreduce_ms / 1e3), 1e-6))
    for p in (int(x) for x in args.ranks.split(",")):
        for name, bw, alpha in networks:
            if name.startswith("this machine") and p != 2:
                continue  # measured for 2 ranks only
            per = [ring(p, b, alpha, bw) for b in sizes]
            compute = t1 / p
            no_overlap = compute + sum(per)
            hidden = max(0.0, sum(per[:-1]) - args.backward_share * compute)
            overlap = compute + hidden + per[-1]
            print(json.dumps({"ranks": p, "network": name, "latency_us": alpha * 1e6, "buckets": len(sizes),
                              "allreduce_ms": round(1e3 * sum(per), 2), "compute_ms": round(1e3 * compute, 1),
                              "speedup_no_overlap": round(t1 / no_overlap, 2),
                              "speedup_overlap": round(t1 / overlap, 2)}))


if __name__ == "__main__":
    main()
