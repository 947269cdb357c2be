#!/usr/bin/env python3
"""PyTorch anchor for ddpx's benchmarks: the seed's ViT training step on one GPU, timed like ddpx times itself.

torchvision ViT, synthetic data (normal images, uniform labels) through a DataLoader with worker processes and
pinned memory, cross-entropy, plain SGD; --amp fp32 | tf32 | bf16 (autocast), --compile none | default |
reduce-overhead; optional DDP (world size from torchrun, the seed's static graph and gradients as bucket views
unless --plain-ddp) with --comm-hook and --bucket-mb like ddpx's. Prints one
JSON line (rank 0 only): steps/s over --steps steps after --warmup, and peak device memory. Used by
bench/gpu-run.sh in the same device call as ddpx, and by `ddpx bench` for its PyTorch column.
"""
import argparse
import json
import os
import time

import torch
import torch.nn as nn
import torchvision

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--model", default="vit_l_32")
p.add_argument("--batch", type=int, default=32)
p.add_argument("--warmup", type=int, default=10)
p.add_argument("--steps", type=int, default=50)
p.add_argument("--workers", type=int, default=8)
p.add_argument("--amp", default="fp32", choices=["fp32", "tf32", "bf16"])
p.add_argument("--compile", default="none", choices=["none", "default", "reduce-overhead"])
p.add_argument("--ddp", action="store_true", help="wrap in DistributedDataParallel (run under torchrun)")
p.add_argument("--comm-hook", default="allreduce",
               help="with --ddp: allreduce | fp16 | bf16 | powersgd:R (PowerSGD from step 2, like ddpx)")
p.add_argument("--bucket-mb", type=float, default=25.0, help="with --ddp: DDP bucket_cap_mb")
p.add_argument("--plain-ddp", action="store_true",
               help="with --ddp: DDP's defaults instead of the seed's tuned settings (static_graph=True, "
                    "gradient_as_bucket_view=True)")
p.add_argument("--tag", default="")
args = p.parse_args()

torch.backends.cuda.matmul.allow_tf32 = args.amp == "tf32"
torch.backends.cudnn.allow_tf32 = args.amp == "tf32"


class SyntheticImages(torch.utils.data.Dataset):
    def __init__(self, count):
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        return torch.randn(3, 224, 224), torch.randint(0, 1000, ()).item()


def register_comm_hook(ddp_model, spec):
    """The DDP communication hook named like ddpx's --comm-hook."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    if spec == "allreduce":
        return
    if spec == "fp16":
        ddp_model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif spec == "bf16":
        ddp_model.register_comm_hook(None, default_hooks.bf16_compress_hook)
    elif spec.startswith("powersgd:"):
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=int(spec.split(":")[1]),
                                            start_powerSGD_iter=2)
        ddp_model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    else:
        raise SystemExit(f"--comm-hook {spec}: expected allreduce, fp16, bf16 or powersgd:R")


def main():
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    model = getattr(torchvision.models, args.model)(weights=None).cuda()
    if args.ddp:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        dist.init_process_group("nccl")
        # The seed's tuned DDP (static graph, gradients as bucket views) unless --plain-ddp: ddpx is compared
        # with PyTorch's best data-parallel settings, not its defaults.
        tuned = {} if args.plain_ddp else {"static_graph": True, "gradient_as_bucket_view": True}
        model = DistributedDataParallel(model, device_ids=[local], bucket_cap_mb=args.bucket_mb, **tuned)
        register_comm_hook(model, args.comm_hook)
    step_fn_model = torch.compile(model, mode=None if args.compile == "default" else args.compile) \
        if args.compile != "none" else model
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    total = args.warmup + args.steps
    loader = torch.utils.data.DataLoader(SyntheticImages(total * args.batch), batch_size=args.batch,
                                         num_workers=args.workers, pin_memory=True, drop_last=True)
    torch.cuda.reset_peak_memory_stats()
    start = None
    for i, (images, labels) in enumerate(loader):
        if i == args.warmup:
            torch.cuda.synchronize()
            start = time.perf_counter()
        images = images.cuda(non_blocking=True)
        labels = labels.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp == "bf16"):
            loss = criterion(step_fn_model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    result = {"engine": "pytorch", "tag": args.tag, "model": args.model, "batch": args.batch, "amp": args.amp,
              "compile": args.compile, "ddp": args.ddp, "steps": args.steps,
              "comm_hook": args.comm_hook if args.ddp else None, "bucket_mb": args.bucket_mb if args.ddp else None,
              "ddp_tuned": (args.ddp and not args.plain_ddp) or None,
              "world": int(os.environ.get("WORLD_SIZE", 1)),
              "steps_per_s": args.steps / seconds,
              "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30,
              "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    if int(os.environ.get("RANK", 0)) == 0:  # one line per run, also under torchrun
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
