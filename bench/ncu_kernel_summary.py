#!/usr/bin/env python3
"""Summarise an `ncu --csv --metrics gpu__time_duration.sum` log: time per kernel family, largest first.

Usage: ncu_kernel_summary.py LOG [TOP]. Kernel names are shortened to their function name (templates and
arguments dropped); cuBLAS/cuBLASLt kernels are grouped as "cublas gemm". Prints total ms, count and share.
"""
import csv
import re
import sys
from collections import defaultdict


def family(name: str) -> str:
    if re.search(r"gemm|nvjet|cutlass|xmma|sm90_", name):
        return "cublas gemm"
    name = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "").removeprefix("void ")
    name = re.sub(r"\(.*", "", name)
    name = re.sub(r"<.*", "", name)
    return name.split("::")[-1].strip()


def main() -> None:
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 15
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        print(f"{path}: no ncu CSV header found")
        return
    totals, counts = defaultdict(float), defaultdict(int)
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0}.get(
            row.get("Metric Unit", "ns"), 1e-6)
        key = family(row["Kernel Name"])
        totals[key] += value * scale
        counts[key] += 1
    total = sum(totals.values())
    print(f"{'kernel family':<36} {'ms':>8} {'count':>6} {'share':>6}")
    for key, ms in sorted(totals.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{key[:36]:<36} {ms:8.3f} {counts[key]:6d} {100 * ms / total:5.1f}%")
    print(f"{'all kernels':<36} {total:8.3f} {sum(counts.values()):6d}")


if __name__ == "__main__":
    main()
