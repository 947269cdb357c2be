#!/usr/bin/env python3
"""The table of bench/ddp-phases.sh: per run name, the median step, forward, backward and optimizer over a run's
measured steps (from its report), and the calibration steps' plain step and forward where there are any. With more
than one round (reports NAME.r1.json, NAME.r2.json, ...: every name run once per round, in order, so the rounds
interleave the names on the GPU), each figure is the median over the rounds of the runs' medians, with the
rounds' range beside the step; and every name after the first gets its step's difference to the first name's,
taken round by round (the same minutes of the GPU) and then the median and range over rounds, in ms and percent
of the first name's step: the estimate of what the flags cost that a GPU drifting between runs moves least.
Usage: ddp_phases_summary.py OUT ROUNDS NAME [NAME ...]   (ROUNDS 1: reports are OUT/NAME.json)"""
import json
import os
import statistics
import sys


def run_medians(path):
    try:
        rank = json.load(open(path))["ranks"][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        sys.exit(f"ddp_phases_summary: {path}: not a run report with a rank ({e})")
    steps = rank.get("steps") or []
    if not steps:
        sys.exit(f"ddp_phases_summary: {path}: no measured steps (raise --steps above --warmup)")
    med = {key: statistics.median(s["phases"][key] for s in steps)
           for key in ("total_ms", "forward_ms", "backward_ms", "optimizer_ms")}
    med["calibration"] = [c["plain"] for c in rank.get("calibration") or []]
    return med


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    out, names = argv[1], argv[3:]
    try:
        rounds = int(argv[2])
    except ValueError:
        sys.exit(f"ddp_phases_summary: ROUNDS '{argv[2]}' is not a whole number")
    if rounds < 1:
        sys.exit(f"ddp_phases_summary: ROUNDS {rounds} must be at least 1")
    path = (lambda n, r: os.path.join(out, f"{n}.json")) if rounds == 1 else \
        (lambda n, r: os.path.join(out, f"{n}.r{r}.json"))
    runs = {n: [run_medians(path(n, r)) for r in range(1, rounds + 1)] for n in names}
    over = lambda n, key: statistics.median(m[key] for m in runs[n])
    print(f"# {'run':<22} {'step':>7} {'forward':>8} {'backward':>9} {'optimizer':>10}"
          + ("  step range over rounds" if rounds > 1 else "") + "  calibration (step / forward)")
    for n in names:
        steps = [m["total_ms"] for m in runs[n]]
        spread = f"  {min(steps):.3f}-{max(steps):.3f}" if rounds > 1 else ""
        cal = " ".join(f"{c['total_ms']:.3f} / {c['forward_ms']:.3f}" for m in runs[n] for c in m["calibration"])
        print(f"  {n:<22} {over(n, 'total_ms'):7.3f} {over(n, 'forward_ms'):8.3f} {over(n, 'backward_ms'):9.3f} "
              f"{over(n, 'optimizer_ms'):10.3f}{spread}  {cal}")
    if rounds > 1 and len(names) > 1:
        base = names[0]
        print(f"# step against {base}, round by round (median and range over {rounds} rounds)")
        for n in names[1:]:
            diffs = [m["total_ms"] - b["total_ms"] for m, b in zip(runs[n], runs[base])]
            pcts = [100 * d / b["total_ms"] for d, b in zip(diffs, runs[base])]
            print(f"  {n:<22} {statistics.median(diffs):+7.3f} ms ({min(diffs):+.3f} to {max(diffs):+.3f})  "
                  f"{statistics.median(pcts):+6.2f}% ({min(pcts):+.2f} to {max(pcts):+.2f})")


if __name__ == "__main__":
    main(sys.argv)
