#!/usr/bin/env python3
"""Trains the same model on Fashion-MNIST in ddpx and in PyTorch, from ddpx's initial weights, on the same data in
the same order, with the same schedule and regularization, and compares the loss curves and the final test top-1
(issue 39 item 7). Runs on the CPU; PyTorch from Debian's python3-torch (use /usr/bin/python3).

    /usr/bin/python3 bench/recipe_torch_compare.py --ddpx build/src/cli/ddpx --model mlp --work /tmp/cmp
    /usr/bin/python3 bench/recipe_torch_compare.py --ddpx build/src/cli/ddpx --model vit --work /tmp/cmp
    python3 bench/recipe_torch_compare.py --ddpx build/src/cli/ddpx --model vit --device cuda --work /tmp/cmp

--device cuda (issue 42 step 3) trains ddpx with --precision bf16 and PyTorch under torch.autocast(bfloat16) on the
GPU, fp32 master weights on both sides, and evaluates both in fp32 on the CPU. Same recipe as on the CPU by
default; --plain-recipe drops label smoothing, clipping and --no-decay (what the CUDA engine ran before 2026-12-05,
for comparing with the first bf16 figures).

What is the same on both sides:
  - data: /usr/share/datasets/fashion-mnist (dataset-fashion-mnist), pixels / 255 normalized by the training set's
    mean 0.2860 and std 0.3530, written once as .npy; step k trains on rows [kB, (k+1)B) mod 60000 (ddpx's
    --images order at one rank), the test top-1 is over all 10,000 test images;
  - weights: `ddpx model --init` (seed 0) loaded by both; PyTorch's module has ddpx's reference names (the MLP of
    tools/make_fixtures.py; torchvision's VisionTransformer with a 1-channel conv_proj);
  - recipe: SGD momentum 0.9, weight decay 5e-4 off biases/norms/embeddings (--no-decay: param groups), linear
    warm-up then cosine (SequentialLR(LinearLR, CosineAnnealingLR), optim/lr_schedule.hpp), label smoothing 0.1,
    clip_grad_norm_ 1.0 after backward.
For scale, PyTorch runs twice more: from ddpx's initial weights of seeds 1 and 2 ("seed noise"): the ddpx-PyTorch
gap in loss (mean over windows of 50 steps) and top-1 is to be read against the gap between those seeds.
Prints a Markdown table and writes <work>/<model>_compare.json.
"""
import argparse
import contextlib
import warnings
import gzip
import json
import math
import os
import pathlib
import re
import struct
import subprocess
import time

import numpy as np
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", message="The epoch parameter")
DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")
MEAN, STD = 0.2860, 0.3530
MODELS = {
    "mlp": dict(spec="mlp:image=28,channels=1,layers=2,width=256,classes=10", batch=128, steps=1000, lr=0.05,
                warmup=100),
    "vit": dict(spec="custom:image=28,patch=7,layers=2,hidden=64,heads=4,mlp=128,classes=10,channels=1", batch=64,
                steps=900, lr=0.05, warmup=90),
}
RECIPE = dict(momentum=0.9, weight_decay=5e-4, label_smoothing=0.1, clip=1.0, warmup_start=0.1, min_lr=0.0,
              no_decay=True)
# --plain-recipe (see the header): the optimizer and schedule only.
PLAIN_RECIPE = dict(RECIPE, label_smoothing=0.0, clip=0.0, no_decay=False)


def read_idx(name):
    with gzip.open(DATA / name) as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def prepare_data(work):
    paths = {k: work / f"{k}.npy" for k in ("train_images", "train_labels", "test_images", "test_labels")}
    if all(p.exists() for p in paths.values()):
        return paths
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images = read_idx(f"{prefix}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
        images = ((images - MEAN) / STD).astype(np.float32)[:, None, :, :]
        np.save(paths[f"{split}_images"], images)
        np.save(paths[f"{split}_labels"], read_idx(f"{prefix}-labels-idx1-ubyte.gz").astype(np.int64))
    return paths


def read_safetensors(path):
    data = pathlib.Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        b, e = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[8 + n + b:8 + n + e], dtype=np.float32).copy()).reshape(
            info["shape"])
    return out


class Mlp(torch.nn.Module):
    def __init__(self, features, layers, width, classes):
        super().__init__()
        self.hidden = torch.nn.ModuleList(
            [torch.nn.Linear(features if l == 0 else width, width) for l in range(layers)])
        self.head = torch.nn.Linear(width, classes)

    def forward(self, images):
        x = images.flatten(1)
        for layer in self.hidden:
            x = F.gelu(layer(x))
        return self.head(x)


def torch_model(kind):
    if kind == "mlp":
        return Mlp(784, 2, 256, 10)
    import torchvision
    model = torchvision.models.VisionTransformer(image_size=28, patch_size=7, num_layers=2, num_heads=4,
                                                 hidden_dim=64, mlp_dim=128, num_classes=10)
    model.conv_proj = torch.nn.Conv2d(1, 64, kernel_size=7, stride=7)
    return model


def exempt(name, tensor):  # model/no_decay.hpp's rule
    return tensor.dim() <= 1 or name.endswith("pos_embedding") or name.endswith("class_token")


def train_torch(kind, init, data, cfg, log_every, device="cpu", recipe=RECIPE):
    torch.set_num_threads(1)
    model = torch_model(kind)
    state = read_safetensors(init)
    model.load_state_dict(state, strict=True)
    model.to(device)
    exempt_from_decay = exempt if recipe["no_decay"] else (lambda name, tensor: False)
    decay = [p for n, p in model.named_parameters() if not exempt_from_decay(n, p)]
    no_decay = [p for n, p in model.named_parameters() if exempt_from_decay(n, p)]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": recipe["weight_decay"]},
                           {"params": no_decay, "weight_decay": 0.0}], lr=cfg["lr"], momentum=recipe["momentum"])
    warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=recipe["warmup_start"], end_factor=1.0,
                                             total_iters=cfg["warmup"])
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg["steps"] - cfg["warmup"],
                                                        eta_min=recipe["min_lr"])
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cosine], milestones=[cfg["warmup"]])
    images = torch.from_numpy(np.array(np.load(data["train_images"], mmap_mode="r"))).to(device)
    labels = torch.from_numpy(np.load(data["train_labels"])).to(device)
    n, b = images.shape[0], cfg["batch"]
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device == "cuda" else contextlib.nullcontext()
    losses = {}
    start = time.time()
    for step in range(1, cfg["steps"] + 1):
        rows = torch.arange((step - 1) * b, step * b, device=device) % n
        with autocast:
            loss = F.cross_entropy(model(images[rows]), labels[rows], label_smoothing=recipe["label_smoothing"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if recipe["clip"]:
            torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["clip"])
        opt.step()
        sched.step()
        if step % log_every == 0 or step == 1:
            losses[step] = loss.item()
    seconds = time.time() - start
    model.cpu()
    with torch.no_grad():
        test = torch.from_numpy(np.load(data["test_images"]))
        test_labels = torch.from_numpy(np.load(data["test_labels"]))
        correct = sum((model(test[i:i + 1000]).argmax(1) == test_labels[i:i + 1000]).sum().item()
                      for i in range(0, len(test), 1000))
    return dict(losses=losses, top1=100.0 * correct / len(test), seconds=seconds)


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"failed ({result.returncode}): {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def train_ddpx(ddpx, kind, init, data, cfg, work, log_every, device="cpu", recipe=RECIPE):
    out = work / f"{kind}_ddpx_{device}.safetensors"
    engine = ["--device", "cpu", "--cpu-threads", "1"] if device == "cpu" else ["--device", "cuda", "--precision",
                                                                                 "bf16"]
    cmd = [ddpx, "train", *engine, "--workers", "1", "--model", cfg["spec"],
           "--images", str(data["train_images"]), "--labels", str(data["train_labels"]), "--load", str(init),
           "--batch", str(cfg["batch"]), "--steps", str(cfg["steps"]), "--warmup", "0", "--optimizer", "sgd",
           "--lr", str(cfg["lr"]), "--momentum", str(recipe["momentum"]),
           "--weight-decay", str(recipe["weight_decay"]), "--lr-schedule", "cosine",
           "--lr-warmup-steps", str(cfg["warmup"]), "--lr-warmup-start", str(recipe["warmup_start"]),
           "--log-every", str(log_every), "--save", str(out)]
    if recipe["no_decay"]:
        cmd.append("--no-decay")
    if recipe["label_smoothing"]:
        cmd += ["--label-smoothing", str(recipe["label_smoothing"])]
    if recipe["clip"]:
        cmd += ["--clip-grad-norm", str(recipe["clip"])]
    start = time.time()
    stdout = run(cmd)
    seconds = time.time() - start
    losses = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"step\s+(\d+)/\d+ \| loss ([0-9.]+)", stdout)}
    logits = work / f"{kind}_ddpx_logits.npy"
    run([ddpx, "eval", "--device", "cpu", "--model", cfg["spec"], "--weights", str(out), "--images",
         str(data["test_images"]), "--out", str(logits)])
    predicted = np.load(logits).argmax(1)
    top1 = 100.0 * float((predicted == np.load(data["test_labels"])).mean())
    return dict(losses=losses, top1=top1, seconds=seconds, command=" ".join(cmd))


def window_means(losses, window):
    steps = sorted(losses)
    means = {}
    for s in steps:
        key = (s - 1) // window
        means.setdefault(key, []).append(losses[s])
    return [sum(v) / len(v) for _, v in sorted(means.items())]


def max_gap(a, b, window):
    return max(abs(x - y) for x, y in zip(window_means(a, window), window_means(b, window)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ddpx", required=True)
    parser.add_argument("--model", choices=sorted(MODELS), default="mlp")
    parser.add_argument("--work", default="/tmp/ddpx-recipe-compare")
    parser.add_argument("--steps", type=int, help="override the model's step count")
    parser.add_argument("--plain-recipe", action="store_true",
                        help="no label smoothing, clipping or --no-decay on either side (the optimizer and schedule only)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda: ddpx --precision bf16 against PyTorch autocast bf16 (see the header)")
    args = parser.parse_args()
    recipe = PLAIN_RECIPE if args.plain_recipe else RECIPE
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cfg = dict(MODELS[args.model])
    if args.steps:
        cfg["steps"] = args.steps
        cfg["warmup"] = max(1, args.steps // 10)
    data = prepare_data(work)
    inits = {}
    for seed in (0, 1, 2):
        inits[seed] = work / f"{args.model}_init{seed}.safetensors"
        run([args.ddpx, "model", "--brief", "--model", cfg["spec"], "--init", str(inits[seed]), "--seed", str(seed)])
    log_every = 1
    ddpx = train_ddpx(args.ddpx, args.model, inits[0], data, cfg, work, log_every, args.device, recipe)
    torch_runs = {seed: train_torch(args.model, inits[seed], data, cfg, log_every, args.device, recipe)
                  for seed in (0, 1, 2)}
    window = 50
    result = dict(
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), model=args.model, spec=cfg["spec"], config=cfg,
        device=args.device, precision="fp32" if args.device == "cpu" else "bf16 (ddpx) / autocast bf16 (PyTorch)",
        recipe=recipe, torch=torch.__version__, ddpx_command=ddpx["command"],
        top1=dict(ddpx=ddpx["top1"], **{f"torch_seed{s}": r["top1"] for s, r in torch_runs.items()}),
        seconds=dict(ddpx=ddpx["seconds"], **{f"torch_seed{s}": r["seconds"] for s, r in torch_runs.items()}),
        loss_gap=dict(ddpx_vs_torch_same_init=max_gap(ddpx["losses"], torch_runs[0]["losses"], window),
                      torch_seed0_vs_seed1=max_gap(torch_runs[0]["losses"], torch_runs[1]["losses"], window),
                      torch_seed0_vs_seed2=max_gap(torch_runs[0]["losses"], torch_runs[2]["losses"], window)),
        final_loss=dict(ddpx=window_means(ddpx["losses"], window)[-1],
                        **{f"torch_seed{s}": window_means(r["losses"], window)[-1] for s, r in torch_runs.items()}),
        curves=dict(ddpx=window_means(ddpx["losses"], window),
                    **{f"torch_seed{s}": window_means(r["losses"], window) for s, r in torch_runs.items()}))
    (work / f"{args.model}_{args.device}_compare.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"| {args.model} on {args.device} ({cfg['steps']} steps, batch {cfg['batch']}) | test top-1 | last {window} steps' loss "
          f"| max gap of {window}-step mean loss to PyTorch (same init) | s |")
    print("|---|---|---|---|---|")
    print(f"| ddpx | {ddpx['top1']:.2f} | {result['final_loss']['ddpx']:.4f} | "
          f"{result['loss_gap']['ddpx_vs_torch_same_init']:.4f} | {ddpx['seconds']:.0f} |")
    for s, r in torch_runs.items():
        gap = 0.0 if s == 0 else max_gap(torch_runs[0]["losses"], r["losses"], window)
        print(f"| PyTorch {torch.__version__}, init seed {s} | {r['top1']:.2f} | "
              f"{result['final_loss'][f'torch_seed{s}']:.4f} | {gap:.4f} | {r['seconds']:.0f} |")
    gap = abs(ddpx["top1"] - torch_runs[0]["top1"])
    print(f"top-1 gap ddpx - PyTorch (same init): {ddpx['top1'] - torch_runs[0]['top1']:+.2f} points "
          f"({'within' if gap <= 0.3 else 'NOT within'} 0.3)")


if __name__ == "__main__":
    main()
