#!/usr/bin/env python3
"""Reads bench/gpu-run.sh's output folder and prints ddpx beside the PyTorch anchor as a Markdown table."""
import glob
import json
import os
import re
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "out"
torch_rows = {}
for line in open(os.path.join(out, "torch.jsonl")) if os.path.exists(os.path.join(out, "torch.jsonl")) else []:
    r = json.loads(line)
    torch_rows[r["tag"]] = r

summary_re = re.compile(r"summary: .*?\| ([0-9.]+) steps/s.*?data wait ([0-9.]+)%")
memory_re = re.compile(r"peak device memory ([0-9.]+) GiB")
ddpx_rows = {}
for log in sorted(glob.glob(os.path.join(out, "ddpx_*.log"))):
    name = os.path.basename(log)[5:-4]
    text = open(log).read()
    m = summary_re.search(text)
    mem = memory_re.search(text)
    ddpx_rows[name] = {"steps_per_s": float(m.group(1)) if m else None,
                       "data_wait_pct": float(m.group(2)) if m else None,
                       "peak_mem_gib": float(mem.group(1)) if mem else None}

pairs = [("fp32", "eager_fp32"), ("tf32", "eager_tf32"), ("bf16", "eager_bf16"), ("bf16", "compile_ro_bf16")]
print("| ddpx configuration | ddpx steps/s | ddpx peak GiB | data wait | PyTorch configuration | PyTorch steps/s | PyTorch peak GiB | ratio |")
print("|---|---|---|---|---|---|---|---|")
fmt = lambda v, f="{:.1f}": "-" if v is None else f.format(v)
for ours, theirs in pairs:
    d, t = ddpx_rows.get(ours, {}), torch_rows.get(theirs, {})
    ratio = d.get("steps_per_s") / t["steps_per_s"] if d.get("steps_per_s") and t.get("steps_per_s") else None
    print(f"| {ours} | {fmt(d.get('steps_per_s'))} | {fmt(d.get('peak_mem_gib'))} | {fmt(d.get('data_wait_pct'), '{:.1f}%')} "
          f"| {theirs} | {fmt(t.get('steps_per_s'))} | {fmt(t.get('peak_mem_gib'))} | {fmt(ratio, '{:.2f}x')} |")
for name, d in ddpx_rows.items():
    if name not in {p[0] for p in pairs}:
        print(f"| {name} | {fmt(d.get('steps_per_s'))} | {fmt(d.get('peak_mem_gib'))} | {fmt(d.get('data_wait_pct'), '{:.1f}%')} | | | | |")
json.dump({"ddpx": ddpx_rows, "pytorch": torch_rows}, open(os.path.join(out, "results.json"), "w"), indent=1)
