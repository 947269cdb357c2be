#!/usr/bin/env bash
# ddpx predict against the seed article's 8x L40S table (issue 12, point 6; ../shared/docs/seed-summary.md).
# Inputs: the synthetic one-GPU reports of make_reports.py (the article's own one-GPU figures plus the assumptions
# stated there) and (1) the pcie-shm link preset, (2) l40s-implied-link.json, the bus bandwidth the article's own
# 587 ms all-reduce implies (3.66 GB/s): with it the fp32 row matches by construction, and the rows that test the
# model are the hooks' and bucket caps' gains.
# Usage: bench/seed-article/validate.sh [DDPX]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ddpx=$(readlink -f "${1:-$here/../../build/src/cli/ddpx}")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 "$here/make_reports.py" "$ddpx" "$out"
reports=("$out/l40s-ddp.json" "$out/l40s-no-ddp.json" "$out/l40s-ddp-bf16.json" "$out/l40s-ddp-powersgd1.json")
for link in pcie-shm "$here/l40s-implied-link.json"; do
  echo "## --link $(basename "$link")"
  "$ddpx" predict "${reports[@]}" --link "$link" --ranks 8 --hooks allreduce,bf16,powersgd:1 --bucket-cap-mb 2000 \
    --first-bucket-mb 2000 --json "$out/one-bucket.json" | grep -v '^wrote'
  "$ddpx" predict "${reports[@]}" --link "$link" --ranks 8 --hooks bf16 --bucket-cap-mb 25,100 --first-bucket-mb 1 \
    --json "$out/small-buckets.json" | grep -v '^wrote'
  python3 - "$out/one-bucket.json" "$out/small-buckets.json" <<'PY'
import json, sys
one = {r["hook"]: r["steps_per_s"] for r in json.load(open(sys.argv[1]))["rows"]}
small = max(r["steps_per_s"] for r in json.load(open(sys.argv[2]))["rows"])
base = 8.91
article = {"8-GPU DDP, one 2 GB bucket (steps/s)": (one["allreduce"], 1000 / 701),
           "slowdown against 1 GPU (x)": (base / one["allreduce"], base / (1000 / 701)),
           "bf16 hook's gain (%)": (100 * (one["bf16"] / one["allreduce"] - 1), 65.0),
           "PowerSGD rank 1 (steps/s)": (one["powersgd:1"], 7.5),
           "PowerSGD over the baseline (x)": (one["powersgd:1"] / one["allreduce"], 7.5 / (1000 / 701)),
           "smaller buckets on top of bf16 (%)": (100 * (small / one["bf16"] - 1), 12.0)}
print(f"{'figure':<40} {'predicted':>10} {'article':>10} {'error':>9}")
for name, (predicted, stated) in article.items():
    print(f"{name:<40} {predicted:>10.2f} {stated:>10.2f} {100 * (predicted - stated) / stated:>+8.0f}%")
PY
done
