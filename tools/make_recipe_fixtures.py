#!/usr/bin/env python3
"""Dumps PyTorch reference values for the training-recipe pieces (tests/optim/test_recipe_fixtures.cpp,
tests/model/test_soft_targets.cpp, tests/data/test_batch_mixing.cpp).

    /usr/bin/python3 tools/make_recipe_fixtures.py --out tests/fixtures/recipe_torch.json

Runs on the CPU with torch alone (Debian's python3-torch 1.13 here). Writes one JSON file:
  - "schedules": for each case, the rate torch.optim.lr_scheduler gives every optimizer step of a run (read from
    param_groups[0]["lr"] before optimizer.step(), one scheduler.step() after it), for the SequentialLR(LinearLR
    warm-up, MAIN) composition that optim/lr_schedule.hpp documents; Python floats (float64).
  - "cross_entropy": logits, labels, label_smoothing and torch.nn.functional.cross_entropy's loss and gradient in
    float64, with class indices, and with mixed probability targets (torchvision's mixup targets).
  - "clip": three gradient tensors (fp32 values), max_norm, torch.nn.utils.clip_grad_norm_'s returned norm and the
    clipped values, once clipping and once not.
  - "ema": weights after each of 4 steps and torchvision's ExponentialMovingAverage (AveragedModel with
    avg = decay * avg + (1 - decay) * param) after each update_parameters(), fp32.
  - "mix": a batch [4, 2, 6, 5], labels, and the mixed batch and targets for mixup with a fixed lambda and cutmix
    with a fixed lambda and centre, by torchvision's transforms.v2 MixUp/CutMix code (torchvision 0.14 here has no
    v2, so its few lines are written out below with the draws fixed; fp32 tensor ops as in torchvision).
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F

SEED = 20261205


def schedule_rates(base_lr, steps, main, warmup=0, start=0.01, min_lr=0.0, step_every=0, gamma=0.1):
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=base_lr)
    main_steps = steps - warmup
    if main == "constant":
        sched = torch.optim.lr_scheduler.ConstantLR(opt, factor=1.0, total_iters=0)
    elif main == "cosine":
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=main_steps, eta_min=min_lr)
    elif main == "linear":
        sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=min_lr / base_lr,
                                                  total_iters=main_steps)
    elif main == "step":
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=step_every, gamma=gamma)
    if warmup > 0:
        warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=start, end_factor=1.0, total_iters=warmup)
        sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, sched], milestones=[warmup])
    rates = []
    for _ in range(steps):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return dict(main=main, base_lr=base_lr, steps=steps, warmup=warmup, start=start, min_lr=min_lr,
                step_every=step_every, gamma=gamma, rates=rates)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.manual_seed(SEED)
    out = {"torch": torch.__version__}

    out["schedules"] = [
        schedule_rates(0.1, 40, "constant"),
        schedule_rates(0.1, 40, "constant", warmup=7, start=0.01),
        schedule_rates(0.05, 50, "cosine"),
        schedule_rates(0.05, 50, "cosine", warmup=10, start=0.1, min_lr=1e-4),
        schedule_rates(0.003, 30, "linear", warmup=5, start=0.25, min_lr=1e-5),
        schedule_rates(0.003, 30, "linear"),
        schedule_rates(0.2, 45, "step", step_every=10, gamma=0.5),
        schedule_rates(0.2, 45, "step", warmup=3, start=0.5, step_every=7, gamma=0.1),
    ]

    batch, classes = 6, 5
    logits = torch.randn(batch, classes, dtype=torch.float64) * 2
    labels = torch.randint(classes, (batch,))
    ce = []
    for smoothing in (0.0, 0.1, 0.3):
        x = logits.clone().requires_grad_(True)
        loss = F.cross_entropy(x, labels, label_smoothing=smoothing)
        loss.backward()
        ce.append(dict(kind="indices", smoothing=smoothing, mix=1.0, loss=loss.item(),
                       grad=x.grad.flatten().tolist()))
    for smoothing, lam in ((0.0, 0.7), (0.1, 0.35)):
        onehot = F.one_hot(labels, classes).to(torch.float64)
        target = onehot.roll(1, 0) * (1.0 - lam) + onehot * lam  # torchvision's mixed targets
        x = logits.clone().requires_grad_(True)
        loss = F.cross_entropy(x, target, label_smoothing=smoothing)
        loss.backward()
        ce.append(dict(kind="mixed", smoothing=smoothing, mix=lam, loss=loss.item(), grad=x.grad.flatten().tolist()))
    out["cross_entropy"] = dict(batch=batch, classes=classes, logits=logits.flatten().tolist(),
                                labels=labels.tolist(), partner_labels=labels.roll(1, 0).tolist(), cases=ce)

    grads = [torch.randn(3, 4), torch.randn(5), torch.randn(2, 2, 2)]
    clip = []
    for max_norm in (1.0, 100.0):
        params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        clip.append(dict(max_norm=max_norm, norm=norm.item(),
                         clipped=torch.cat([p.grad.flatten() for p in params]).tolist()))
    out["clip"] = dict(grads=torch.cat([g.flatten() for g in grads]).tolist(), cases=clip)

    decay = 0.9
    model = torch.nn.Linear(3, 2)
    ema_model = torch.optim.swa_utils.AveragedModel(
        model, avg_fn=lambda avg, param, num: decay * avg + (1 - decay) * param)
    weights, averages = [], []
    for _ in range(4):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
        ema_model.update_parameters(model)
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]).tolist())
        averages.append(torch.cat([p.detach().flatten() for p in ema_model.module.parameters()]).tolist())
    out["ema"] = dict(decay=decay, weights=weights, averages=averages)

    n, c, h, w = 4, 2, 6, 5
    images = torch.randn(n, c, h, w)
    mix_labels = torch.randint(10, (n,))
    lam = 0.3  # MixUp: output = inpt.roll(1, 0).mul_(1.0 - lam).add_(inpt.mul(lam))
    mixup = images.roll(1, 0).mul_(1.0 - lam).add_(images.mul(lam))
    lam_c, r_x, r_y = 0.6, 1, 4  # CutMix's box, torchvision v2's _mixup_cutmix code with r_x, r_y drawn
    r = 0.5 * math.sqrt(1.0 - lam_c)
    r_w_half, r_h_half = int(r * w), int(r * h)
    x1, y1 = int(max(r_x - r_w_half, 0)), int(max(r_y - r_h_half, 0))
    x2, y2 = int(min(r_x + r_w_half, w)), int(min(r_y + r_h_half, h))
    cutmix = images.clone()
    cutmix[..., y1:y2, x1:x2] = images.roll(1, 0)[..., y1:y2, x1:x2]
    lam_adjusted = float(1.0 - (x2 - x1) * (y2 - y1) / (w * h))
    out["mix"] = dict(shape=[n, c, h, w], images=images.flatten().tolist(), labels=mix_labels.tolist(),
                      partner_labels=mix_labels.roll(1, 0).tolist(), mixup_lambda=lam,
                      mixup=mixup.flatten().tolist(), cutmix_lambda=lam_c, cutmix_r_x=r_x, cutmix_r_y=r_y,
                      cutmix_box=[x1, y1, x2, y2], cutmix_lambda_adjusted=lam_adjusted,
                      cutmix=cutmix.flatten().tolist())
    with open(args.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
