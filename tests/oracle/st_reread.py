"""Reads a safetensors file written by attn with an independent reader that
follows the format's specification (no attn code, no `safetensors` package:
Debian has no python3-safetensors), checks every rule a standard reader
enforces, and writes what it read back out with st.py for the C++ test to
compare bit for bit.

usage: st_reread.py OUT IN
Rules checked (the safetensors spec):
  - 8-byte little-endian unsigned header length N, N <= file size - 8
  - the header is N bytes of UTF-8 JSON, an object; may end in spaces
  - "__metadata__", if present, maps strings to strings
  - every other entry has exactly dtype, shape, data_offsets; dtype is a known
    name; offsets are [begin, end] relative to the data section, and
    end - begin == prod(shape) * itemsize
  - the entries' byte ranges, sorted, tile the data section exactly
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402

ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def fail(msg):
    sys.exit(f"st_reread: {msg}")


def main():
    out, path = sys.argv[1], sys.argv[2]
    raw = open(path, "rb").read()
    if len(raw) < 8:
        fail("file shorter than 8 bytes")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        fail(f"header length {n} exceeds the file")
    text = raw[8 : 8 + n].decode("utf-8")
    if not text.rstrip(" ").endswith("}"):
        fail("the header is not a JSON object followed only by spaces")
    header = json.loads(text)
    if not isinstance(header, dict):
        fail("header is not an object")
    data = raw[8 + n :]
    meta = header.pop("__metadata__", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        fail("__metadata__ is not str -> str")
    ranges, tensors = [], {}
    for name, e in header.items():
        if set(e) != {"dtype", "shape", "data_offsets"}:
            fail(f"{name}: keys {sorted(e)}")
        if e["dtype"] not in ITEMSIZE:
            fail(f"{name}: unknown dtype {e['dtype']}")
        b, end = e["data_offsets"]
        if end - b != int(np.prod(e["shape"], dtype=np.int64)) * ITEMSIZE[e["dtype"]]:
            fail(f"{name}: byte range does not match the shape")
        ranges.append((b, end))
        if e["dtype"] != "F32":
            fail(f"{name}: attn writes F32, found {e['dtype']}")
        tensors[name] = np.frombuffer(data[b:end], dtype="<f4").reshape(e["shape"])
    pos = 0
    for b, end in sorted(ranges):
        if b != pos:
            fail("byte ranges do not tile the data section")
        pos = end
    if pos != len(data):
        fail("bytes after the last tensor")
    st.save(out, tensors, meta)


if __name__ == "__main__":
    main()
