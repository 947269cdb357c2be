#!/usr/bin/env python3
"""Reads bench/gpu-run.sh's output folder and prints ddpx beside the PyTorch anchor as a Markdown table.

Throughput comes from each ddpx run's report (`ddpx_NAME.json`, throughput.steps_per_s / images_per_s; never the
log's summary line) and from the anchor's JSON lines (`torch.jsonl`). Every row also gets images/s and the model
FLOP utilization: MFU = images/s * 3 * forward FLOPs per image / 989e12 (dense bf16 peak of an H100/H200 SXM, the
figure the issue and NVIDIA's JAX-Toolbox MFU use), where the forward FLOPs are 2 x the multiply-adds of the
torchvision ViT (what torchvision lists as `_ops`: 17.56 G for vit_b_16, 15.38 G for vit_l_32). The same peak is
used for every precision, so fp32/tf32 rows read as a share of the bf16 peak. Also writes results.json.
"""
import glob
import json
import os
import re
import sys

PEAK_BF16_FLOPS = 989e12

# torchvision ViT variants: image, patch, layers, hidden, mlp, classes (as src/model/vit_config.cpp).
VIT = {
    "vit_b_16": (224, 16, 12, 768, 3072, 1000),
    "vit_b_32": (224, 32, 12, 768, 3072, 1000),
    "vit_l_16": (224, 16, 24, 1024, 4096, 1000),
    "vit_l_32": (224, 32, 24, 1024, 4096, 1000),
    "vit_h_14": (224, 14, 32, 1280, 5120, 1000),
}


def forward_macs(model):
    """Multiply-adds of one image's forward pass: patch embedding, per layer QKV, QK^T, AV, projection and MLP,
    and the head (LayerNorm, softmax, GELU and adds are not counted, as in torchvision's figure)."""
    image, patch, layers, d, mlp, classes = VIT[model]
    patches = (image // patch) ** 2
    n = patches + 1
    per_layer = n * d * 3 * d + 2 * n * n * d + n * d * d + 2 * n * d * mlp
    return patches * 3 * patch * patch * d + layers * per_layer + d * classes


def mfu(model, images_per_s):
    if model not in VIT or not images_per_s:
        return None
    return images_per_s * 3 * 2 * forward_macs(model) / PEAK_BF16_FLOPS


def load_ddpx(out):
    rows = {}
    memory_re = re.compile(r"peak device memory ([0-9.]+) GiB")
    for path in sorted(glob.glob(os.path.join(out, "ddpx_*.json"))):
        name = os.path.basename(path)[5:-5]
        try:
            report = json.load(open(path))
        except (OSError, ValueError):
            continue
        throughput = report.get("throughput", {})
        config = report.get("config", {})
        steps = report.get("ranks", [{}])[0].get("steps", [])
        waits = sorted(s["phases"].get("data_wait_ms", 0) for s in steps if "phases" in s)
        totals = sorted(s["phases"].get("total_ms", 0) for s in steps if "phases" in s)
        wait_pct = 100 * waits[len(waits) // 2] / totals[len(totals) // 2] if totals and totals[len(totals) // 2] else None
        log = os.path.join(out, f"ddpx_{name}.log")
        mem = memory_re.search(open(log).read()) if os.path.exists(log) else None
        rows[name] = {"model": config.get("model"), "batch": config.get("batch"),
                      "steps_per_s": throughput.get("steps_per_s"), "images_per_s": throughput.get("images_per_s"),
                      "data_wait_pct": wait_pct, "peak_mem_gib": float(mem.group(1)) if mem else None}
        rows[name]["mfu"] = mfu(rows[name]["model"], rows[name]["images_per_s"])
    return rows


def load_torch(out):
    rows = {}
    path = os.path.join(out, "torch.jsonl")
    for line in open(path) if os.path.exists(path) else []:
        r = json.loads(line)
        r["images_per_s"] = r["steps_per_s"] * r.get("batch", 32) * r.get("world", 1)
        r["mfu"] = mfu(r.get("model"), r["images_per_s"])
        rows[r["tag"]] = r
    return rows


def main(out):
    ddpx, torch = load_ddpx(out), load_torch(out)
    pairs = [("fp32", "eager_fp32"), ("tf32", "eager_tf32"), ("bf16", "eager_bf16"), ("bf16", "compile_ro_bf16"),
             ("b16_bf16", "compile_ro_bf16_b16")]
    f = lambda v, spec="{:.1f}": "-" if v is None else spec.format(v)
    print("| ddpx configuration | model, batch | ddpx steps/s | images/s | MFU | peak GiB | data wait "
          "| PyTorch configuration | PyTorch steps/s | images/s | MFU | peak GiB | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    paired = set()
    for ours, theirs in pairs:
        d, t = ddpx.get(ours), torch.get(theirs)
        if d is None and t is None:
            continue
        d, t = d or {}, t or {}
        paired.add(ours)
        ratio = d["steps_per_s"] / t["steps_per_s"] if d.get("steps_per_s") and t.get("steps_per_s") else None
        print(f"| {ours} | {d.get('model', '-')}, {d.get('batch', '-')} | {f(d.get('steps_per_s'))} "
              f"| {f(d.get('images_per_s'), '{:.0f}')} | {f(d.get('mfu') and 100 * d['mfu'], '{:.1f}%')} "
              f"| {f(d.get('peak_mem_gib'))} | {f(d.get('data_wait_pct'), '{:.1f}%')} "
              f"| {theirs} | {f(t.get('steps_per_s'))} | {f(t.get('images_per_s'), '{:.0f}')} "
              f"| {f(t.get('mfu') and 100 * t['mfu'], '{:.1f}%')} | {f(t.get('peak_mem_gib'))} "
              f"| {f(ratio, '{:.2f}x')} |")
    for name, d in ddpx.items():
        if name not in paired:
            print(f"| {name} | {d.get('model', '-')}, {d.get('batch', '-')} | {f(d.get('steps_per_s'))} "
                  f"| {f(d.get('images_per_s'), '{:.0f}')} | {f(d.get('mfu') and 100 * d['mfu'], '{:.1f}%')} "
                  f"| {f(d.get('peak_mem_gib'))} | {f(d.get('data_wait_pct'), '{:.1f}%')} | | | | | | |")
    json.dump({"ddpx": ddpx, "pytorch": torch}, open(os.path.join(out, "results.json"), "w"), indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        # torchvision's _ops (GMACs) for the two models the benchmarks use; within 0.1%.
        for model, want in (("vit_b_16", 17.564), ("vit_l_32", 15.378)):
            got = forward_macs(model) / 1e9
            assert abs(got - want) / want < 1e-3, (model, got, want)
        # NVIDIA JAX-Toolbox's ViT-B/16 on H100: 1459 images/s per GPU is 15.5% MFU.
        assert abs(mfu("vit_b_16", 1459) - 0.155) < 0.001, mfu("vit_b_16", 1459)
        print("summarize.py self-test passed")
        sys.exit(0)
    main(sys.argv[1] if len(sys.argv) > 1 else "out")
