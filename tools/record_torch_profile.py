#!/usr/bin/env python3
"""PyTorch profiler traces of a PyTorch DDP run with known injected delays, for `ddpx report --torch-profile`'s
tests (tests/fixtures/torch_profile, checked in small).

Two ranks of torch.nn.parallel.DistributedDataParallel over Gloo on the CPU train a small MLP (64 -> 256 -> 10,
batch 32, one intra-op thread per rank). torch.profiler records steps 2 and 3 (schedule wait=1, warmup=1,
active=2) and every rank writes trace_rank<R>.json with export_chrome_trace. Injected:
  - rank 1 sleeps FORWARD_DELAY_MS (40 ms) inside its forward pass: its forward is that much longer, it is the
    straggler, and rank 0 waits for it in the gradient all-reduce (exposed communication of about that much);
  - every rank sleeps OPTIMIZER_DELAY_MS (15 ms) inside a record_function named "Optimizer.step#Delay.step",
    which the analysis counts as optimizer time.
Debian's torch 1.13 has no Kineto, so its export is the legacy profiler's JSON (a bare list of events); PyTorch
2.x writes Kineto's ({"traceEvents": [...]}): the reader takes both. The GPU form (NCCL kernels) is recorded with
PyTorch 2.11 in the GPU-run issue.
Run: python3 tools/record_torch_profile.py [OUT_DIR]   (Debian's python3-torch)
     python3 tools/record_torch_profile.py --nccl OUT_DIR (2 GPUs, PyTorch with CUDA: NCCL, CPU and CUDA activities)
"""
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

FORWARD_DELAY_MS, OPTIMIZER_DELAY_MS = 40, 15


class Mlp(nn.Module):
    def __init__(self, delay_s):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 10)
        self.delay_s = delay_s

    def forward(self, x):
        if self.delay_s:
            time.sleep(self.delay_s)
        return self.fc2(F.relu(self.fc1(x)))


def worker(rank, port, out, nccl):
    torch.set_num_threads(1)
    dist.init_process_group("nccl" if nccl else "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    device = torch.device("cuda", rank) if nccl else torch.device("cpu")
    if nccl:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    model = Mlp(FORWARD_DELAY_MS / 1000 if rank == 1 else 0).to(device)
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64, device=device), torch.randint(0, 10, (32,), device=device)
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if nccl else [])
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=2)
    path = os.path.join(out, f"trace_rank{rank}.json")
    with torch.profiler.profile(activities=activities, schedule=schedule,
                                on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(4):
            optimizer.zero_grad()
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()
            optimizer.step()
            with torch.profiler.record_function("Optimizer.step#Delay.step"):
                time.sleep(OPTIMIZER_DELAY_MS / 1000)
            prof.step()
    dist.destroy_process_group()


def main():
    args = [a for a in sys.argv[1:] if a != "--nccl"]
    nccl = "--nccl" in sys.argv[1:]
    out = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                                              "torch_profile")
    os.makedirs(out, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(port, out, nccl), nprocs=2, join=True)
    print(f"wrote {out}/trace_rank0.json, trace_rank1.json (torch {torch.__version__})")


if __name__ == "__main__":
    main()
