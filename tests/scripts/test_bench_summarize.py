#!/usr/bin/env python3
"""bench/summarize.py: forward FLOPs against torchvision's figures, MFU against JAX-Toolbox's published one, and a
table read from run reports (never from the log's summary line) with images/s and MFU per row."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "summarize.py")

subprocess.run([sys.executable, SCRIPT, "--self-test"], check=True)
with tempfile.TemporaryDirectory() as out:
    report = {"config": {"model": "vit_l_32", "batch": 32},
              "throughput": {"steps_per_s": 100.0, "images_per_s": 3200.0},
              "ranks": [{"steps": [{"phases": {"data_wait_ms": 0.5, "total_ms": 10.0}}] * 3}]}
    json.dump(report, open(os.path.join(out, "ddpx_bf16.json"), "w"))
    # A summary line that disagrees: the table must not read it.
    open(os.path.join(out, "ddpx_bf16.log"), "w").write(
        "summary: 10 steps in 1 s | 1.00 steps/s | data wait 99.0% of the step\npeak device memory 4.30 GiB\n")
    open(os.path.join(out, "torch.jsonl"), "w").write(json.dumps(
        {"tag": "compile_ro_bf16", "model": "vit_l_32", "batch": 32, "world": 1, "steps_per_s": 62.5,
         "peak_mem_gib": 3.2}) + "\n")
    table = subprocess.run([sys.executable, SCRIPT, out], check=True, capture_output=True, text=True).stdout
    row = [line for line in table.splitlines() if "compile_ro_bf16" in line]
    assert len(row) == 1, table
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    # 3200 images/s * 6 * 15.3775e9 / 989e12 = 29.85%
    assert cells[2:7] == ["100.0", "3200", "29.9%", "4.3", "5.0%"], cells
    assert cells[8:11] == ["62.5", "2000", "18.7%"], cells
    assert cells[-1] == "1.60x", cells
    results = json.load(open(os.path.join(out, "results.json")))
    assert abs(results["ddpx"]["bf16"]["mfu"] - 0.2985) < 1e-3, results
print("bench/summarize.py: all checks passed")
