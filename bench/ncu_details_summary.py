#!/usr/bin/env python3
"""Summarise `ncu --section ...` details text (the default page): one line per profiled kernel launch.

Usage: ncu_details_summary.py LOG [--csv]. Columns: the kernel's function name, grid x block, duration (us), DRAM
and L1/TEX throughput (% of peak), achieved / theoretical occupancy (%), registers per thread, the block limit that
binds, and the share of excess (uncoalesced) sectors where ncu reports one. A value a section did not report is
"-". Reads the text that `bench/ncu-kernels.sh` writes; needs no ncu here.
"""
import csv
import re
import sys

HEADER = re.compile(r"^  (?:void )?(?P<name>\S.*?)\((?P<args>.*)\) "
                    r"\((?P<grid>[\d, ]+)\)x\((?P<block>[\d, ]+)\), Context")
METRICS = {
    "duration_us": re.compile(r"^\s+Duration\s+(?P<unit>\w+)\s+(?P<v>[\d.,]+)"),
    "dram_pct": re.compile(r"^\s+DRAM Throughput\s+%\s+(?P<v>[\d.,]+)"),
    "l1_pct": re.compile(r"^\s+L1/TEX Cache Throughput\s+%\s+(?P<v>[\d.,]+)"),
    "achieved_pct": re.compile(r"^\s+Achieved Occupancy\s+%\s+(?P<v>[\d.,]+)"),
    "theoretical_pct": re.compile(r"^\s+Theoretical Occupancy\s+%\s+(?P<v>[\d.,]+)"),
    "registers": re.compile(r"^\s+Registers Per Thread\s+register/thread\s+(?P<v>[\d.,]+)"),
}
BLOCK_LIMIT = re.compile(r"^\s+Block Limit (?P<what>[\w ]+?)\s+block\s+(?P<v>\d+)")
EXCESS = re.compile(r"excessive sectors \((?P<v>\d+)% of the")
SCALE = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}


def short(name: str) -> str:
    name = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "").replace("unnamed>::", "")
    return name.split("::")[-1].strip()


def parse(lines):
    kernels, current = [], None
    for line in lines:
        header = HEADER.match(line)
        if header:
            current = {"kernel": short(header["name"]),
                       "launch": f"({header['grid'].replace(' ', '')})x({header['block'].replace(' ', '')})",
                       "limits": {}}
            kernels.append(current)
            continue
        if current is None:
            continue
        for key, pattern in METRICS.items():
            found = pattern.match(line)
            if found and key not in current:
                value = float(found["v"].replace(",", ""))
                if key == "duration_us":
                    value *= SCALE.get(found["unit"], 1.0)
                current[key] = value
        limit = BLOCK_LIMIT.match(line)
        if limit:
            current["limits"][limit["what"]] = int(limit["v"])
        excess = EXCESS.search(line)
        if excess and "excess_pct" not in current:
            current["excess_pct"] = float(excess["v"])
    for kernel in kernels:
        limits = kernel.pop("limits")
        if limits:
            what = min(limits, key=limits.get)
            kernel["binding_limit"] = f"{what.lower()} ({limits[what]} blocks/SM)"
    return kernels


COLUMNS = ["kernel", "launch", "duration_us", "dram_pct", "l1_pct", "achieved_pct", "theoretical_pct", "registers",
           "binding_limit", "excess_pct"]


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    kernels = parse(open(sys.argv[1], errors="replace").read().splitlines())
    if not kernels:
        print(f"{sys.argv[1]}: no profiled kernel found (did the -k regex match? see bench/ncu-kernels.sh)")
        return 1
    if "--csv" in sys.argv[2:]:
        writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS)
        writer.writeheader()
        for kernel in kernels:
            writer.writerow({c: kernel.get(c, "") for c in COLUMNS})
        return 0
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for kernel in kernels:
        cells = []
        for column in COLUMNS:
            value = kernel.get(column, "-")
            if isinstance(value, float):
                cells.append(f"{value:.0f}" if column == "registers" else f"{value:.1f}")
            else:
                cells.append(str(value))
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
