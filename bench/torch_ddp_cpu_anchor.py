#!/usr/bin/env python3
"""PyTorch's own DDP training examples/torch_ddp/train_cnn.cpp's CNN on Fashion-MNIST: the anchor that
bench/torch-ddp-cpu.sh times beside the LibTorch adapter, in the same run.

Same network (--width W), same slicing of the global batch, same loss and SGD, Gloo on the CPU, one intra-op
thread per rank (as the script sets OMP_NUM_THREADS=1 for both). Prints rank 0's
"pytorch_ddp: X ms/step (steps 1..N-1)", the figure train_cnn prints in the same form.
Run: python3 bench/torch_ddp_cpu_anchor.py --world 2 --steps 60 --batch 64 --width 16
"""
import argparse
import gzip
import os
import socket
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class Cnn(nn.Module):
    def __init__(self, width, image):
        super().__init__()
        self.conv1 = nn.Conv2d(1, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.fc = nn.Linear(2 * width * (image // 4) ** 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def fashion_mnist(directory):
    with gzip.open(os.path.join(directory, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read()[16:], dtype=np.uint8)
    with gzip.open(os.path.join(directory, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read()[8:], dtype=np.uint8)
    x = torch.from_numpy(images.copy().reshape(-1, 1, 28, 28)).to(torch.float32) / 255
    return x, torch.from_numpy(labels.copy()).to(torch.int64)


def worker(rank, args, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.world)
    torch.manual_seed(1 + rank)
    model = Cnn(args.width, 28)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    x, y = fashion_mnist(args.fashion_mnist)
    n = y.numel()
    start = None
    for step in range(args.steps):
        if step == 1:
            dist.barrier()
            start = time.perf_counter()
        index = (torch.arange(args.batch) + (step * args.world * args.batch + rank * args.batch)) % n
        optimizer.zero_grad()
        loss = F.nll_loss(F.log_softmax(ddp(x.index_select(0, index)), 1), y.index_select(0, index))
        loss.backward()
        optimizer.step()
    dist.barrier()
    if rank == 0:
        ms = (time.perf_counter() - start) * 1000 / (args.steps - 1)
        print(f"pytorch_ddp: {ms:.3f} ms/step (steps 1..{args.steps - 1})", flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--bucket-mb", type=float, default=25)
    parser.add_argument("--fashion-mnist", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(args, port), nprocs=args.world, join=True)


if __name__ == "__main__":
    main()
