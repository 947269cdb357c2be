#!/usr/bin/env python3
"""Synthetic one-GPU run reports of the seed article's L40S ViT-L/32 runs, for `ddpx predict` (issue 12, point 6).

The article gives no per-phase times, only throughput (../shared/docs/seed-summary.md): one L40S, fp32, batch 32,
8.91 steps/s without DDP and 8.40 with DDP (the difference: copies of the gradients into and out of its one 2 GB
bucket). Each report built here has three identical steps made from those figures and these stated assumptions:
  - forward : backward = 1 : 2 of the compute (the usual ratio of a transformer's training step);
  - optimizer 4.3 ms: plain SGD reads weights and gradients and writes weights, 306.5 M x 12 bytes = 3.7 GB, at
    the L40S's 864 GB/s memory bandwidth;
  - no data wait (8 pinned loader workers), no host-to-device wait;
  - DDP's own work: 1000/8.40 - 1000/8.91 = 6.81 ms a step, recorded as the single bucket's duration at world 1
    (ready at the end of backward, since one 2000 MB bucket is launched only then);
  - the hooks' own work, which the article does not measure: PyTorch's on one H200 (docs/anchors.md, fp32 column:
    DDP 11.6, bf16 hook 11.5, PowerSGD rank 1 10.4 steps/s), i.e. +0.75 ms (bf16) and +9.95 ms (PowerSGD rank 1)
    on top of DDP's 6.81 ms. An L40S is slower than an H200, so these are lower bounds.
The gradient tensors are ddpx's ViT-L/32 layout, read from `ddpx model --model vit_l_32` (torchvision names and
shapes, 256-byte aligned offsets; the buffer is 306,535,424 elements).
Usage: make_reports.py DDPX OUT_DIR
"""
import json
import re
import subprocess
import sys

ddpx, out_dir = sys.argv[1], sys.argv[2]
table = subprocess.run([ddpx, "model", "--model", "vit_l_32"], check=True, capture_output=True, text=True).stdout
tensors = []
for line in table.splitlines():
    m = re.match(r"^(\S+)\s+\[([0-9, ]+)\]\s+(\d+)\s+(\d+)$", line)
    if m:
        shape = [int(x) for x in m.group(2).split(",")]
        tensors.append({"name": m.group(1), "shape": shape, "offset": int(m.group(3)), "numel": int(m.group(4))})
assert len(tensors) == 296, len(tensors)
buffer_elements = tensors[-1]["offset"] + tensors[-1]["numel"]

NO_DDP_STEP_MS = 1000 / 8.91
DDP_STEP_MS = 1000 / 8.40
OPTIMIZER_MS = 4.3
compute = NO_DDP_STEP_MS - OPTIMIZER_MS
FORWARD_MS, BACKWARD_MS = compute / 3, 2 * compute / 3
DDP_OWN_MS = DDP_STEP_MS - NO_DDP_STEP_MS
HOOK_EXTRA_MS = {"allreduce": 0.0, "bf16": 1000 / 11.5 - 1000 / 11.6, "powersgd:1": 1000 / 10.4 - 1000 / 11.6}


def report(name, ddp, hook):
    own = DDP_OWN_MS + HOOK_EXTRA_MS[hook] if ddp else 0.0
    step_ms = NO_DDP_STEP_MS + own
    steps = []
    for s in range(3):
        phases = {"data_wait_ms": 0.0, "h2d_copy_ms": 0.0, "forward_ms": FORWARD_MS, "backward_ms": BACKWARD_MS,
                  "comm_ms": own, "exposed_comm_ms": own, "optimizer_ms": OPTIMIZER_MS, "total_ms": step_ms}
        buckets = []
        if ddp:  # one 2000 MB bucket, ready when backward ends (on a clock starting at forward)
            ready = FORWARD_MS + BACKWARD_MS
            buckets = [{"index": 0, "bytes": buffer_elements * 4, "elements": buffer_elements, "hook": hook,
                        "launch_ms": ready, "start_ms": ready, "end_ms": ready + own}]
        steps.append({"step": 11 + s, "start_ms": 1000.0 + s * step_ms, "phases": phases, "buckets": buckets})
    config = {"model": "vit_l_32", "batch": 32, "precision": "fp32", "hook": hook, "bucket_mb": 2000,
              "first_bucket_mb": 2000, "overlap": True, "grad_accum": 1, "world": 1, "ddp": ddp, "workers": 8,
              "gradient_tensors": tensors}
    run = {"config": config,
           "ranks": [{"info": {"rank": 0, "device_name": "NVIDIA L40S", "precision": "fp32", "world_size": 1,
                               "transport": "", "host": "seed-article-g6e"}, "steps": steps}],
           "throughput": {"steps_per_s": 1000 / step_ms, "images_per_s": 32000 / step_ms}}
    with open(f"{out_dir}/{name}.json", "w") as f:
        json.dump(run, f, indent=1)
        f.write("\n")


report("l40s-no-ddp", False, "allreduce")
report("l40s-ddp", True, "allreduce")
report("l40s-ddp-bf16", True, "bf16")
report("l40s-ddp-powersgd1", True, "powersgd:1")
