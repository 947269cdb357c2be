#!/usr/bin/env python3
"""DDP's cost as the verdict states it against the measured throughput difference (issue 12, point 1).

For each (DDP run, plain run) pair of run reports: the measured difference is 1 - steps/s(DDP) / steps/s(plain),
the share of the DDP step that the plain run does not spend; the verdict's figure is the report's
ddp_cost.cost_ms / ddp_cost.measured_step_ms (profile/ddp_cost.hpp). Prints both in percent of the step, their
gap in points, and PASS when the gap is within --tolerance points (default 1). Exit status 1 when any pair fails
or lacks a calibrated cost.

Usage: ddp_cost_check.py [--tolerance 1.0] DDP.json:PLAIN.json [...]
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main(argv):
    tolerance = 1.0
    if len(argv) >= 2 and argv[0] == "--tolerance":
        tolerance = float(argv[1])
        argv = argv[2:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    failed = False
    print(f"# {'ddp run':<28} {'measured diff':>13} {'verdict cost':>13} {'gap':>7}  parts (exposed + hook + rest, ms)")
    for pair in argv:
        ddp_path, plain_path = pair.split(":")
        ddp, plain = load(ddp_path), load(plain_path)
        measured = 100.0 * (1.0 - ddp["throughput"]["steps_per_s"] / plain["throughput"]["steps_per_s"])
        cost = ddp.get("ddp_cost")
        name = ddp_path.rsplit("/", 1)[-1]
        if not cost:
            print(f"  {name:<28} {measured:12.1f}% {'-':>13} {'-':>7}  NOT CALIBRATED (raise --warmup)")
            failed = True
            continue
        figure = 100.0 * cost["cost_ms"] / cost["measured_step_ms"]
        gap = figure - measured
        ok = abs(gap) <= tolerance
        failed |= not ok
        print(f"  {name:<28} {measured:12.1f}% {figure:12.1f}% {gap:+6.1f}  "
              f"{cost['exposed_comm_ms']:.3f} + {cost['hook_work_ms']:.3f} + {cost['other_ms']:.3f} = "
              f"{cost['cost_ms']:.3f} of {cost['measured_step_ms']:.3f}  {'PASS' if ok else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
