#!/usr/bin/env python3
"""Time to accuracy on one GPU (issue 51 item 3): the same ViT trained on Fashion-MNIST by ddpx (--precision bf16,
whole-step CUDA graphs) and by PyTorch (torch.autocast bf16, torch.compile), from the same initial weights, on the
same data in the same order, with the same recipe, each evaluated on the 10,000 test images every epoch; prints the
wall-clock seconds each took to first reach each target top-1 (default 90 and 91%) and writes <work>/tta.json.

    python3 bench/time_to_accuracy.py --ddpx build/src/cli/ddpx --work /tmp/tta [--epochs 30] [--skip-torch]

What is the same on both sides:
  - data: Fashion-MNIST (/usr/share/datasets/fashion-mnist) as recipe_torch_compare.py writes it (pixels / 255,
    normalized by 0.2860 and 0.3530), the training set permuted once (numpy seed 0); step k trains on rows
    [kB, (k+1)B) mod 60000 of that order (ddpx's --images order at one rank; PyTorch indexes a tensor on the GPU);
  - model: ddpx's `custom:` ViT and torchvision's VisionTransformer of the same shape with a 1-channel conv_proj,
    both from `ddpx model --init` (seed 0);
  - recipe: AdamW (betas 0.9, 0.999, eps 1e-8), weight decay off biases, norms, position embedding and class token,
    linear warm-up then cosine per step (SequentialLR(LinearLR, CosineAnnealingLR)), label smoothing 0.1, gradient
    clipping at 1.0;
  - evaluation: every `steps per epoch` steps (60000 // batch), all 10,000 test images; ddpx through --val (its own
    evaluator, bf16), PyTorch with the uncompiled module under autocast bf16.
The clock: from the start of each process's training run (ddpx: the launch of `ddpx train`, so its start-up, data
loading and graph capture count; PyTorch: before torch.compile, so compilation counts) to the arrival of the
evaluation that first reaches the target. Evaluation time counts on both sides.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import recipe_torch_compare as compare  # noqa: E402

SHAPE = dict(image=28, patch=4, layers=6, hidden=192, heads=6, mlp=768, classes=10, channels=1)
RECIPE = dict(batch=256, lr=1e-3, weight_decay=0.05, warmup_epochs=2, warmup_start=0.01, label_smoothing=0.1,
              clip=1.0)


def spec(shape):
    return "custom:" + ",".join(f"{k}={v}" for k, v in shape.items())


def shuffled_data(work):
    data = compare.prepare_data(work)
    out = {"images": work / "train_images_shuffled.npy", "labels": work / "train_labels_shuffled.npy"}
    if not all(p.exists() for p in out.values()):
        order = np.random.default_rng(0).permutation(60000)
        np.save(out["images"], np.load(data["train_images"])[order])
        np.save(out["labels"], np.load(data["train_labels"])[order])
    return dict(data, **out)


def torch_vit(shape):
    import torchvision
    model = torchvision.models.VisionTransformer(
        image_size=shape["image"], patch_size=shape["patch"], num_layers=shape["layers"], num_heads=shape["heads"],
        hidden_dim=shape["hidden"], mlp_dim=shape["mlp"], num_classes=shape["classes"])
    model.conv_proj = torch.nn.Conv2d(shape["channels"], shape["hidden"], kernel_size=shape["patch"],
                                      stride=shape["patch"])
    return model


def reached(curve, target):
    """(seconds, epoch) of the first evaluation at or above target, or None."""
    for point in curve:
        if point["top1"] >= target:
            return point["seconds"], point["epoch"]
    return None


def train_ddpx(ddpx, init, data, shape, recipe, epochs, fmnist, work, extra):
    per_epoch = 60000 // recipe["batch"]
    steps = epochs * per_epoch
    cmd = [ddpx, "train", "--device", "cuda", "--precision", "bf16", "--model", spec(shape), "--load", str(init),
           "--images", str(data["images"]), "--labels", str(data["labels"]),
           "--val", f"idx:{fmnist}:test", "--mean", "0.2860", "--std", "0.3530",
           "--batch", str(recipe["batch"]), "--steps", str(steps), "--warmup", "0", "--optimizer", "adamw",
           "--lr", str(recipe["lr"]), "--weight-decay", str(recipe["weight_decay"]), "--no-decay",
           "--lr-schedule", "cosine", "--lr-warmup-steps", str(recipe["warmup_epochs"] * per_epoch),
           "--lr-warmup-start", str(recipe["warmup_start"]), "--label-smoothing", str(recipe["label_smoothing"]),
           "--clip-grad-norm", str(recipe["clip"]), "--eval-every", str(per_epoch), "--log-every", str(per_epoch),
           *extra]
    curve = []
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = []
    for line in proc.stdout:
        log.append(line)
        m = re.search(r"eval\s+(\d+)/\d+ \| val loss ([0-9.]+) \| top-1 ([0-9.]+)%", line)
        if m and "(EMA)" not in line:
            step = int(m.group(1))
            curve.append(dict(epoch=step / per_epoch, step=step, seconds=time.time() - start,
                              loss=float(m.group(2)), top1=float(m.group(3))))
            print(f"  ddpx  epoch {step / per_epoch:5.1f}: top-1 {float(m.group(3)):.2f}% at {curve[-1]['seconds']:.1f} s",
                  flush=True)
    rc = proc.wait()
    (work / "ddpx_train.log").write_text("".join(log))
    if rc != 0:
        raise SystemExit(f"ddpx failed ({rc}): {' '.join(cmd)}\n{''.join(log[-20:])}")
    return dict(curve=curve, seconds=time.time() - start, command=" ".join(cmd))


def train_torch(init, data, shape, recipe, epochs, compile_mode):
    device = "cuda"
    start = time.time()
    model = torch_vit(shape)
    model.load_state_dict(compare.read_safetensors(init), strict=True)
    model.to(device)
    decay = [p for n, p in model.named_parameters() if not compare.exempt(n, p)]
    no_decay = [p for n, p in model.named_parameters() if compare.exempt(n, p)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": recipe["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=recipe["lr"], betas=(0.9, 0.999),
                            eps=1e-8)
    per_epoch = 60000 // recipe["batch"]
    steps, warmup = epochs * per_epoch, recipe["warmup_epochs"] * per_epoch
    warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=recipe["warmup_start"], end_factor=1.0,
                                             total_iters=warmup)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps - warmup, eta_min=0.0)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cosine], milestones=[warmup])
    images = torch.from_numpy(np.load(data["images"])).to(device)
    labels = torch.from_numpy(np.load(data["labels"])).to(device)
    test = torch.from_numpy(np.load(data["test_images"])).to(device)
    test_labels = torch.from_numpy(np.load(data["test_labels"])).to(device)
    forward = torch.compile(model, mode=compile_mode) if compile_mode != "none" else model
    n, b = images.shape[0], recipe["batch"]
    curve = []
    for step in range(1, steps + 1):
        rows = torch.arange((step - 1) * b, step * b, device=device) % n
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(forward(images[rows]), labels[rows], label_smoothing=recipe["label_smoothing"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["clip"])
        opt.step()
        sched.step()
        if step % per_epoch == 0:
            model.eval()
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                correct = sum((model(test[i:i + 1000]).argmax(1) == test_labels[i:i + 1000]).sum().item()
                              for i in range(0, len(test), 1000))
            model.train()
            curve.append(dict(epoch=step / per_epoch, step=step, seconds=time.time() - start,
                              top1=100.0 * correct / len(test)))
            print(f"  torch epoch {step / per_epoch:5.1f}: top-1 {curve[-1]['top1']:.2f}% at {curve[-1]['seconds']:.1f} s",
                  flush=True)
    torch.cuda.synchronize()
    return dict(curve=curve, seconds=time.time() - start, compile=compile_mode)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ddpx", required=True)
    parser.add_argument("--work", default="/tmp/ddpx-tta")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--targets", default="90,91")
    parser.add_argument("--fashion-mnist", default=str(compare.DATA))
    parser.add_argument("--compile", default="default", help="torch.compile mode, or none")
    parser.add_argument("--skip-torch", action="store_true")
    parser.add_argument("--shape", default="", help="override the ViT's shape: layers=4,hidden=128,...")
    parser.add_argument("--recipe", default="", help="override the recipe: lr=2e-3,batch=512,...")
    parser.add_argument("--ddpx-flags", default="", help="extra flags for ddpx train")
    args = parser.parse_args()
    shape, recipe = dict(SHAPE), dict(RECIPE)
    for text, into in ((args.shape, shape), (args.recipe, recipe)):
        for item in filter(None, text.split(",")):
            key, value = item.split("=")
            into[key] = type(into[key])(float(value)) if key in into else float(value)
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    compare.DATA = pathlib.Path(args.fashion_mnist)
    data = shuffled_data(work)
    init = work / "vit_init0.safetensors"
    compare.run([args.ddpx, "model", "--brief", "--model", spec(shape), "--init", str(init), "--seed", "0"])
    targets = [float(t) for t in args.targets.split(",")]
    print(f"ViT {spec(shape)}, recipe {recipe}, {args.epochs} epochs", flush=True)
    runs = {"ddpx": train_ddpx(args.ddpx, init, data, shape, recipe, args.epochs, args.fashion_mnist, work,
                               args.ddpx_flags.split())}
    if not args.skip_torch:
        runs["pytorch"] = train_torch(init, data, shape, recipe, args.epochs, args.compile)
    result = dict(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), spec=spec(shape), recipe=recipe,
                  epochs=args.epochs, gpu=torch.cuda.get_device_name(0), torch=torch.__version__, runs=runs,
                  targets={})
    print(f"\n| run | final top-1 | best top-1 | " + " | ".join(f"seconds to {t:g}% (epoch)" for t in targets) +
          " | whole run (s) |")
    print("|---|---|---|" + "---|" * len(targets) + "---|")
    for name, r in runs.items():
        cells = []
        for t in targets:
            hit = reached(r["curve"], t)
            result["targets"].setdefault(str(t), {})[name] = hit
            cells.append(f"{hit[0]:.1f} ({hit[1]:g})" if hit else "not reached")
        best = max(p["top1"] for p in r["curve"]) if r["curve"] else float("nan")
        final = r["curve"][-1]["top1"] if r["curve"] else float("nan")
        label = name if name == "ddpx" else f"PyTorch {torch.__version__}, compile {args.compile}"
        print(f"| {label} | {final:.2f} | {best:.2f} | " + " | ".join(cells) + f" | {r['seconds']:.1f} |")
    if "pytorch" in runs:
        for t in targets:
            a, b = result["targets"][str(t)]["ddpx"], result["targets"][str(t)]["pytorch"]
            if a and b:
                print(f"to {t:g}%: ddpx {b[0] / a[0]:.2f}x sooner than PyTorch")
    (work / "tta.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
