"""Shared timing for the PyTorch peers: same protocol as attn's harness
(warm-up calls, then the median of --repeats calls), torch on --threads."""
import argparse
import json
import statistics
import time


def parser():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=10)
    return p


def median_ms(fn, repeats, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def emit(obj):
    print(json.dumps(obj), flush=True)
