#!/usr/bin/env python3
"""Writes the recorded run reports the profile tests read (tests/profile/data/*.json).

They are synthetic, not measured: each one is a small timeline simulation whose inputs come from the figures in
docs anchors (H200 NCCL all-reduce: 330 GB/s busbw over NVLink, 28-29 GB/s over SHM; ViT-L/32 gradients
1.22 GB in fp32; PyTorch eager keeps the GPU busy 16.9 of 62 ms). Per step: get batch, forward, backward; buckets
become ready evenly through the backward pass (all at its end with --no-overlap) and run one after another on the
comm stream at the link's bus bandwidth; exposed comm = last bucket end - backward end; then the optimizer.
Run it again after changing a scenario; the tests assert numbers taken from these files.
"""
import json
import os
import random
import re

HERE = os.path.dirname(os.path.abspath(__file__))
GRAD_BYTES_FP32 = 1_222_000_000  # ViT-L/32: 306 M parameters


def simulate_step(rng, step, start_ms, p, world, slow=1.0):
    jitter = lambda: 1.0 + rng.uniform(-0.01, 0.01)
    data_wait = p["data_wait"] * jitter()
    h2d = p["h2d"] * jitter()
    fwd = p["forward"] * slow * jitter()
    bwd = p["backward"] * slow * jitter()
    opt = p["optimizer"] * jitter()
    bwd_start = data_wait + h2d + fwd
    bwd_end = bwd_start + bwd
    buckets = []
    n = p["buckets"]
    prev_end = 0.0
    factor = 2.0 * (world - 1) / world
    for k in range(n):
        ready = bwd_start + bwd * (k + 1) / n if p["overlap"] else bwd_end
        start = max(ready + 0.01, prev_end)
        nbytes = p["bucket_bytes"]
        dur = p["per_bucket_ms"] + nbytes * factor / (p["busbw_GBps"] * 1e9) * 1e3 if world > 1 else p["per_bucket_ms"]
        dur *= jitter()
        end = start + dur
        prev_end = end
        buckets.append({"index": k, "bytes": nbytes, "elements": p["bucket_elements"], "hook": p["hook"],
                        "collective": "all_reduce", "launch_ms": round(ready, 4), "start_ms": round(start, 4),
                        "end_ms": round(end, 4), "stream": "comm"})
    exposed = max(0.0, prev_end - bwd_end) if buckets else 0.0
    comm = (prev_end - buckets[0]["launch_ms"]) if buckets else 0.0
    serial = data_wait + h2d + fwd + bwd + exposed + opt
    total = serial + p["other"] * jitter()
    record = {"step": step, "start_ms": round(start_ms, 4),
              "phases": {"data_wait_ms": round(data_wait, 4), "h2d_copy_ms": round(h2d, 4),
                         "forward_ms": round(fwd, 4), "backward_ms": round(bwd, 4), "comm_ms": round(comm, 4),
                         "exposed_comm_ms": round(exposed, 4), "optimizer_ms": round(opt, 4),
                         "total_ms": round(total, 4)},
              "buckets": buckets, "gpu_busy_ms": None}
    if p.get("gpu_busy") is not None:
        record["gpu_busy_ms"] = round(p["gpu_busy"] * jitter(), 4)
    return record, total


def scenario(name, config, p, device="NVIDIA H200", transport="", steps=5, slow_rank=None, seed=1):
    rng = random.Random(seed)
    ranks = []
    for r in range(config["world"]):
        t = 0.0
        records = []
        for s in range(steps):
            rec, total = simulate_step(rng, 10 + s, t, p, config["world"], p["slow"] if r == slow_rank else 1.0)
            records.append(rec)
            t += total + 0.05
        ranks.append({"info": {"rank": r, "device_name": device, "precision": config["precision"],
                               "world_size": config["world"], "transport": transport}, "steps": records})
    report = {"config": config, "ranks": ranks}
    text = json.dumps(report, indent=1)
    # One line per bucket keeps the files short and still readable.
    text = re.sub(r'\{\n\s*"index"[^}]*\}', lambda m: " ".join(m.group(0).split()), text)
    with open(os.path.join(HERE, name), "w") as f:
        f.write(text + "\n")


def config(**kw):
    c = {"model": "vit_l_32", "batch": 32, "precision": "bf16", "hook": "allreduce", "bucket_mb": 25,
         "first_bucket_mb": 1, "overlap": True, "grad_accum": 1, "world": 2, "ddp": True, "workers": 8}
    c.update(kw)
    return c


def params(**kw):
    p = {"data_wait": 0.1, "h2d": 0.2, "forward": 5.0, "backward": 10.0, "optimizer": 1.3, "other": 0.3,
         "buckets": 13, "bucket_bytes": GRAD_BYTES_FP32 // 13, "bucket_elements": GRAD_BYTES_FP32 // 13 // 4,
         "busbw_GBps": 330.0, "per_bucket_ms": 0.03, "overlap": True, "hook": "allreduce", "gpu_busy": None,
         "slow": 1.0}
    p.update(kw)
    return p


# Two H200 with NCCL_P2P_DISABLE=1: fp32 gradients in 100 MB buckets through host shared memory.
scenario("comm_bound_shm.json", config(bucket_mb=100), params(busbw_GBps=28.5), transport="SHM/direct/direct")
# Two H200 over NVLink with the seed's naive single 2000 MB bucket: the all-reduce starts after backward.
scenario("comm_bound_nvlink.json", config(bucket_mb=2000),
         params(forward=2.4, backward=4.8, buckets=1, bucket_bytes=GRAD_BYTES_FP32,
                bucket_elements=GRAD_BYTES_FP32 // 4), transport="P2P/CUMEM/read")
# Two H200 over NVLink with --no-overlap.
scenario("no_overlap.json", config(overlap=False, bucket_mb=50),
         params(forward=2.4, backward=4.8, overlap=False, buckets=25, bucket_bytes=GRAD_BYTES_FP32 // 25,
                bucket_elements=GRAD_BYTES_FP32 // 25 // 4, per_bucket_ms=0.02), transport="P2P/CUMEM/read")
# One GPU without DDP, two loader workers that cannot keep up.
scenario("input_bound.json", config(world=1, ddp=False, precision="fp32", workers=2),
         params(data_wait=21.0, h2d=0.4, forward=20.0, backward=40.0, optimizer=1.3, buckets=0))
# Four H200 over NVLink, bf16 hook, 100 MB buckets: communication hidden; rank 2 runs 9% slower.
scenario("compute_bound.json", config(world=4, hook="bf16", bucket_mb=100),
         params(forward=20.0, backward=40.0, bucket_bytes=GRAD_BYTES_FP32 // 2 // 13,
                bucket_elements=GRAD_BYTES_FP32 // 4 // 13, hook="bf16", gpu_busy=60.5, slow=1.09),
         transport="NV18", slow_rank=2)
# One GPU with DDP (fp32): the reducer's bucket work costs a fraction of a percent.
scenario("ddp_one_gpu.json", config(world=1, precision="fp32"),
         params(forward=25.0, backward=50.0, per_bucket_ms=0.3))
# PyTorch-eager-like bf16 step on one GPU: kernels busy 16.9 of ~62 ms, the rest is launch overhead.
scenario("launch_bound.json", config(world=1, ddp=False),
         params(forward=20.0, backward=38.0, optimizer=3.0, buckets=0, gpu_busy=16.9))
