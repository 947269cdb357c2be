#!/usr/bin/env python3
"""Compares two ddpx weight files (safetensors, F32 tensors) tensor by tensor and prints one line:

    max_abs_diff=<d> max_abs_update=<u> relative=<d/u> tensors=<n> [initial weights from --initial]

max_abs_update is the largest change any weight made between --initial (a weights file of the same model before
training, e.g. `--steps` short run) and the first file; without --initial it is the largest weight. Exits 1 when the
files hold different tensor names or shapes, or when --tolerance T is given and max_abs_diff exceeds it. numpy only,
so it runs on Debian's python3 and on the GPU machine alike.

    python3 bench/weights_diff.py one_rank.safetensors two_ranks.safetensors --tolerance 1e-4
"""
import argparse
import json
import struct
import sys

import numpy as np


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise SystemExit(f"{path}: tensor {name} is {info['dtype']}, expected F32")
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], dtype=np.float32).reshape(info["shape"])
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--initial")
    parser.add_argument("--tolerance", type=float)
    args = parser.parse_args()
    a, b = read(args.a), read(args.b)
    if sorted(a) != sorted(b) or any(a[k].shape != b[k].shape for k in a):
        print(f"different tensors: {sorted(set(a) ^ set(b))[:5]} or shapes")
        return 1
    diff = max(float(np.max(np.abs(a[k] - b[k]))) if a[k].size else 0.0 for k in a)
    if args.initial:
        init = read(args.initial)
        scale = max(float(np.max(np.abs(a[k] - init[k]))) if a[k].size else 0.0 for k in a if k in init)
    else:
        scale = max(float(np.max(np.abs(a[k]))) if a[k].size else 0.0 for k in a)
    rel = diff / scale if scale > 0 else float("inf")
    print(f"max_abs_diff={diff:.3e} max_abs_update={scale:.3e} relative={rel:.3e} tensors={len(a)}")
    return 1 if args.tolerance is not None and diff > args.tolerance else 0


if __name__ == "__main__":
    sys.exit(main())
