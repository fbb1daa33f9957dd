#!/usr/bin/env python3
"""Every loop a kernel source marks `#pragma omp simd` is vectorised (GCC only).

Compiles each ISA source given on the command line with the kernels' flags of
one instruction set plus -fopt-info-vec-all, and fails naming the file and line
of each `omp simd` pragma whose loop GCC reports no "loop vectorized" for (at
the pragma's line or the next three: GCC names the pragma, the `for` or the
loop's first statement). Two such loops once ran scalar on AVX2 unnoticed, as
the AVX-512 build vectorised them with masked operations: the element dropout
(a load under a condition) and the GRU / LSTM gates (a select GCC would not
if-convert before the kernels' -fno-trapping-math).

Usage: vectorised_loops.py CXX "FLAGS" SOURCE...
"""
import re
import shlex
import subprocess
import sys

REPORT = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):\d+: optimized: loop vectorized")
WINDOW = 3  # lines after the pragma where GCC may place the loop's report


def vectorised_lines(cxx, flags, source):
    cmd = [cxx, *flags, "-fopt-info-vec-all", "-c", source, "-o", "/dev/null"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{source}: the compile failed:\n{run.stderr[-4000:]}")
    lines = set()
    for report in run.stderr.splitlines():
        m = REPORT.match(report)
        if m and m.group("file") == source:
            lines.add(int(m.group("line")))
    return lines


def pragma_lines(source):
    with open(source) as f:
        return [n for n, text in enumerate(f, start=1) if re.match(r"\s*#pragma omp .*\bsimd\b", text)]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    cxx, flags, sources = sys.argv[1], shlex.split(sys.argv[2]), sys.argv[3:]
    scalar, checked = [], 0
    for source in sources:
        pragmas = pragma_lines(source)
        if not pragmas:
            continue
        done = vectorised_lines(cxx, flags, source)
        for p in pragmas:
            checked += 1
            if not any(p + d in done for d in range(WINDOW + 1)):
                scalar.append(f"{source}:{p}: the loop of this `omp simd` was not vectorised")
    print(f"{checked} omp simd loops in {len(sources)} sources, {len(scalar)} not vectorised")
    for s in scalar:
        print(s)
    return 1 if scalar or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
