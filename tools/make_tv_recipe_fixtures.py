#!/usr/bin/env python3
"""Dumps PyTorch reference values for the three parts of torchvision's classification recipe that ddpx matches
(tests/optim/test_tv_recipe_fixtures.cpp, tests/data/test_repeated_augment.cpp):

    /usr/bin/python3 tools/make_tv_recipe_fixtures.py --out tests/fixtures/tv_recipe_torch.json

Runs on the CPU with torch alone (Debian's python3-torch 1.13 here). Writes one JSON file:
  - "schedules": the rate of every optimizer step when torch.optim.lr_scheduler's schedulers are built and stepped
    as torchvision's references/classification/train.py does: the main scheduler first (CosineAnnealingLR with
    T_max = units - warm-up, StepLR, ExponentialLR), then the warm-up (LinearLR(start_factor) or
    ConstantLR(factor), total_iters = warm-up) and a SequentialLR(milestones=[warm-up]) over both; the rate read
    from param_groups[0]["lr"] before each optimizer.step(); scheduler.step() once per epoch ("epoch": after
    `per_unit` optimizer steps) or after each optimizer step ("step").
  - "randperm": torch.randperm(n, generator=g) for a torch.Generator seeded with manual_seed(seed).
  - "ra_sampler": the indices each rank iterates in one epoch under the repeated-augmentation sampler's rules
    (torchvision's references/classification/sampler.py RASampler, re-stated below): randperm(n) from a generator
    seeded with seed + epoch, each index `reps` times in a row, the list padded with its own front to a multiple
    of the world size, rank r taking every world-th entry from r, and the first floor(n // 256 * 256 / world) kept.
  - "ema": torchvision's ExponentialMovingAverage (AveragedModel with avg = decay * avg + (1 - decay) * param)
    driven as train.py drives it: the decay adjusted by world x batch x every / epochs, an update after the
    optimizer step of batch i when i % every == 0, and n_averaged reset after each update of the first
    `copy_epochs` epochs; the weights after every optimizer step and the average after it (fp32).
"""
import argparse
import json
import math

import torch

SEED = 20261207


def schedule_rates(main, units, per_unit, base_lr, warmup=0, method="linear", start=0.01, min_lr=0.0,
                   step_size=1, gamma=0.1, unit="epoch"):
    """units: scheduler steps of the run (epochs, or optimizer steps for unit "step", then per_unit is 1)."""
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=base_lr)
    if main == "cosine":
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=units - warmup, eta_min=min_lr)
    elif main == "step":
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=step_size, gamma=gamma)
    elif main == "exponential":
        sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=gamma)
    else:
        raise ValueError(main)
    if warmup > 0:
        if method == "linear":
            warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=start, total_iters=warmup)
        else:
            warm = torch.optim.lr_scheduler.ConstantLR(opt, factor=start, total_iters=warmup)
        sched = torch.optim.lr_scheduler.SequentialLR(opt, schedulers=[warm, sched], milestones=[warmup])
    rates = []
    for _ in range(units):
        for _ in range(per_unit):
            rates.append(opt.param_groups[0]["lr"])
            opt.step()
            if unit == "step":
                sched.step()
        if unit == "epoch":
            sched.step()
    return dict(main=main, unit=unit, units=units, per_unit=per_unit, base_lr=base_lr, warmup=warmup,
                method=method, start=start, min_lr=min_lr, step_size=step_size, gamma=gamma, rates=rates)


def randperm(n, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    return torch.randperm(n, generator=g).tolist()


def ra_indices(n, reps, world, rank, seed, epoch):
    per_rank = int(math.ceil(n * float(reps) / world))
    total = per_rank * world
    selected = int(math.floor(n // 256 * 256 / world))
    indices = [i for i in randperm(n, seed + epoch) for _ in range(reps)]
    indices += indices[: total - len(indices)]
    return indices[rank:total:world][:selected]


def ema_trajectory(decay_flag, world, batch, every, epochs, steps_per_epoch, copy_epochs):
    torch.manual_seed(SEED)
    adjust = world * batch * every / epochs
    alpha = min(1.0, (1.0 - decay_flag) * adjust)
    decay = 1.0 - alpha
    model = torch.nn.Linear(3, 2)
    ema = torch.optim.swa_utils.AveragedModel(model, avg_fn=lambda avg, param, num: decay * avg + (1 - decay) * param,
                                              use_buffers=True)
    weights, averages, updated = [], [], []
    for epoch in range(epochs):
        for i in range(steps_per_epoch):
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(torch.randn_like(p) * 0.5)
            did = i % every == 0
            if did:
                ema.update_parameters(model)
                if epoch < copy_epochs:
                    ema.n_averaged.fill_(0)
            weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]).tolist())
            averages.append(torch.cat([p.detach().flatten() for p in ema.module.parameters()]).tolist())
            updated.append(did)
    return dict(decay_flag=decay_flag, world=world, batch=batch, every=every, epochs=epochs,
                steps_per_epoch=steps_per_epoch, copy_epochs=copy_epochs, decay_used=decay, weights=weights,
                averages=averages, updated=updated)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = {"torch": torch.__version__}

    schedules = []
    for unit, units, per_unit in (("epoch", 12, 5), ("step", 40, 1)):
        warm = 3 if unit == "epoch" else 8
        for method in ("linear", "constant"):
            schedules.append(schedule_rates("cosine", units, per_unit, 0.003, warm, method, 0.033, 1e-5, unit=unit))
            schedules.append(schedule_rates("step", units, per_unit, 0.5, warm, method, 0.1, step_size=2,
                                            gamma=0.5, unit=unit))
            schedules.append(schedule_rates("exponential", units, per_unit, 0.1, warm, method, 0.25, gamma=0.9,
                                            unit=unit))
        schedules.append(schedule_rates("cosine", units, per_unit, 0.05, unit=unit))
        schedules.append(schedule_rates("exponential", units, per_unit, 0.2, gamma=0.8, unit=unit))
    out["schedules"] = schedules

    out["randperm"] = [dict(n=n, seed=seed, perm=randperm(n, seed))
                       for n in (1, 2, 3, 7, 100, 1000, 3001)
                       for seed in (0, 1, 42, 2**32 + 5)]

    ra = []
    for n, reps in ((300, 3), (600, 2), (1000, 3), (513, 4)):
        for world in (1, 2, 4):
            for seed, epoch in ((0, 0), (0, 1), (7, 3)):
                ra.append(dict(n=n, reps=reps, world=world, seed=seed, epoch=epoch,
                               ranks=[ra_indices(n, reps, world, r, seed, epoch) for r in range(world)]))
    out["ra_sampler"] = ra

    out["ema"] = [ema_trajectory(0.99, world=2, batch=3, every=2, epochs=4, steps_per_epoch=5, copy_epochs=1),
                  ema_trajectory(0.9, world=1, batch=1, every=1, epochs=2, steps_per_epoch=4, copy_epochs=0),
                  ema_trajectory(0.8, world=4, batch=8, every=3, epochs=2, steps_per_epoch=7, copy_epochs=0)]
    with open(args.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
