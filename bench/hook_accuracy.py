#!/usr/bin/env python3
"""The seed's question, measured (issue 39 item 8): are the lossy hooks lossy in accuracy? Trains one recipe on
Fashion-MNIST on 2 CPU ranks (Gloo) once per hook - allreduce, fp16, bf16, powersgd:1, powersgd:2, powersgd:4 (PowerSGD
from its default start, the step after the learning-rate warm-up) - and reports each one's final test top-1 and the
time it took to reach a target top-1.

    /usr/bin/python3 bench/hook_accuracy.py --ddpx build/src/cli/ddpx --work /tmp/hooks [--target 85]
    python3 bench/hook_accuracy.py --ddpx build/src/cli/ddpx --device cuda --precision bf16 \
        --launch "--nproc-per-node 2 --ranks-per-gpu 2"      # 2 ranks sharing one GPU (NCCL 2.30+)

Same data (bench/recipe_torch_compare.py's .npy files, in order), same initial weights (seed 0), same recipe for
every hook: the MLP of recipe_torch_compare.py, SGD momentum 0.9, lr 0.05 warm-up then cosine, label smoothing 0.1,
weight decay 5e-4 with --no-decay, batch 64 per rank. A checkpoint every --eval-every steps is scored on the
10,000 test images (PyTorch's forward of the same MLP on the checkpoint's weights); the time to the target is the training time up to the first checkpoint at or
above it (the progress lines' measured intervals summed, evaluation excluded). Prints a Markdown table and writes
<work>/hook_accuracy.json. Wall-clock times on a shared 2-core machine are noisy: compare top-1 first.
"""
import argparse
import json
import pathlib
import re
import shlex
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import recipe_torch_compare as compare  # noqa: E402

HOOKS = ["allreduce", "fp16", "bf16", "powersgd:1", "powersgd:2", "powersgd:4"]
SPEC = compare.MODELS["mlp"]["spec"]


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"failed ({result.returncode}): {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def top1(weights, data):
    """Test top-1 of a checkpoint's weights (its optimizer.* tensors dropped), evaluated by PyTorch's MLP of
    recipe_torch_compare.py, which equals ddpx's forward (that script's comparison)."""
    torch.set_num_threads(1)
    state = {k: v for k, v in compare.read_safetensors(weights).items() if not k.startswith("optimizer.")}
    model = compare.torch_model("mlp")
    model.load_state_dict(state, strict=True)
    test, labels = torch.from_numpy(np.load(data["test_images"])), torch.from_numpy(np.load(data["test_labels"]))
    with torch.no_grad():
        correct = sum((model(test[i:i + 1000]).argmax(1) == labels[i:i + 1000]).sum().item()
                      for i in range(0, len(test), 1000))
    return 100.0 * correct / len(test)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ddpx", required=True)
    parser.add_argument("--work", default="/tmp/ddpx-hook-accuracy")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--target", type=float, default=85.0)
    parser.add_argument("--hooks", default=",".join(HOOKS))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--launch", default="--nproc-per-node 2 --backend gloo --cpu-threads 1",
                        help="how the 2 ranks start (flags of ddpx train)")
    args = parser.parse_args()
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    data = compare.prepare_data(work)
    warmup = args.steps // 10
    rows = []
    for hook in args.hooks.split(","):
        name = hook.replace(":", "")
        ckpt = work / f"ckpt_{name}"
        cmd = [args.ddpx, "train", "--device", args.device, *shlex.split(args.launch), "--ddp",
               "--precision", args.precision, "--workers", "1", "--model", SPEC, "--images", str(data["train_images"]),
               "--labels", str(data["train_labels"]), "--seed", "0", "--batch", "64", "--steps", str(args.steps),
               "--warmup", "0", "--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--weight-decay", "5e-4",
               "--no-decay", "--lr-schedule", "cosine", "--lr-warmup-steps", str(warmup), "--lr-warmup-start", "0.1",
               "--label-smoothing", "0.1", "--comm-hook", hook, "--log-every", str(args.eval_every),
               "--checkpoint-dir", str(ckpt), "--checkpoint-every", str(args.eval_every),
               "--keep-checkpoints", "1000"]
        start = time.time()
        stdout = run(cmd)
        wall = time.time() - start
        elapsed, at = {}, 0.0
        for m in re.finditer(r"step\s+(\d+)/\d+ \| loss [0-9.]+.*?\|\s+([0-9.]+) steps/s", stdout):
            step, rate = int(m.group(1)), float(m.group(2))
            previous = max([s for s in elapsed] or [0])
            at += (step - previous) / rate if rate > 0 else 0
            elapsed[step] = at
        curve = {}
        for step in range(args.eval_every, args.steps + 1, args.eval_every):
            curve[step] = top1(ckpt / f"checkpoint-{step}.safetensors", data)
        reached = [s for s in sorted(curve) if curve[s] >= args.target]
        rows.append(dict(hook=hook, top1=curve[args.steps], curve=curve, wall_s=wall,
                         train_s=elapsed.get(args.steps),
                         step_to_target=reached[0] if reached else None,
                         time_to_target_s=elapsed.get(reached[0]) if reached else None, command=" ".join(cmd)))
        print(f"{hook}: top-1 {curve[args.steps]:.2f}", flush=True)
    result = dict(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), steps=args.steps, target=args.target,
                  rows=rows)
    (work / "hook_accuracy.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"| hook (2 ranks, {args.device}, {args.precision}, {args.steps} steps) | final test top-1 | step reaching {args.target}% | "
          f"training time to it (s) | training time (s) |")
    print("|---|---|---|---|---|")
    for r in rows:
        reach = r["step_to_target"] if r["step_to_target"] else "not reached"
        t = f"{r['time_to_target_s']:.0f}" if r["time_to_target_s"] is not None else "-"
        total = f"{r['train_s']:.0f}" if r["train_s"] is not None else "-"
        print(f"| {r['hook']} | {r['top1']:.2f} | {reach} | {t} | {total} |")


if __name__ == "__main__":
    main()
