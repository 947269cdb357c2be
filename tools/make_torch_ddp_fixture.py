#!/usr/bin/env python3
"""Fixtures for the LibTorch DDP adapter's tests (tests/torch_ddp): PyTorch's own DDP training the same CNN.

Writes into OUT_DIR (default tests/fixtures/torch_ddp):
  images.u8, labels.u8      72 random 16x16 images (uint8) and labels (0..9): 6 steps of a global batch of 12
  weights.f32               the CNN's initial parameters (float32, registration order), torch.manual_seed(0)
  expected_single.f32       the parameters after 6 SGD steps (lr 0.1) in one process, batch 12, without DDP
  expected_pytorch_ddp_2.f32  the same with torch.nn.parallel.DistributedDataParallel, 2 ranks over Gloo on the
                            CPU, batch 6 per rank (rank r takes images [12 t + 6 r, 12 t + 6 r + 6) at step t)
The network, the slicing, the loss (nll_loss(log_softmax) / accumulation) and the update are those of
examples/torch_ddp/train_cnn.cpp, so the adapter must reach these parameters up to fp32 rounding.
Needs Debian's python3-torch (1.13); run: python3 tools/make_torch_ddp_fixture.py [OUT_DIR]
"""
import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

STEPS, GLOBAL_BATCH, IMAGE, WIDTH, LR = 6, 12, 16, 4, 0.1


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, WIDTH, 3, padding=1)
        self.conv2 = nn.Conv2d(WIDTH, 2 * WIDTH, 3, padding=1)
        self.fc = nn.Linear(2 * WIDTH * (IMAGE // 4) ** 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def load_data(out):
    images = np.fromfile(os.path.join(out, "images.u8"), dtype=np.uint8)
    labels = np.fromfile(os.path.join(out, "labels.u8"), dtype=np.uint8)
    x = torch.from_numpy(images.reshape(-1, 1, IMAGE, IMAGE)).to(torch.float32) / 255
    return x, torch.from_numpy(labels).to(torch.int64)


def load_weights(model, path):
    flat = torch.from_numpy(np.fromfile(path, dtype=np.float32))
    at = 0
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(flat[at:at + p.numel()].view_as(p))
            at += p.numel()
    assert at == flat.numel()


def save_weights(model, path):
    np.concatenate([p.detach().numpy().ravel() for p in model.parameters()]).astype(np.float32).tofile(path)


def train(model, x, y, rank, world, batch):
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    n = y.numel()
    for step in range(STEPS):
        index = (torch.arange(batch) + (step * world * batch + rank * batch)) % n
        optimizer.zero_grad()
        loss = F.nll_loss(F.log_softmax(model(x.index_select(0, index)), 1), y.index_select(0, index))
        loss.backward()
        optimizer.step()


def ddp_worker(rank, world, port, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(100 + rank)  # different per rank: DDP's broadcast makes rank 0's weights everyone's
    model = Cnn()
    if rank == 0:
        load_weights(model, os.path.join(out, "weights.f32"))
    ddp = nn.parallel.DistributedDataParallel(model)
    x, y = load_data(out)
    train(ddp, x, y, rank, world, GLOBAL_BATCH // world)
    if rank == 0:
        save_weights(model, os.path.join(out, f"expected_pytorch_ddp_{world}.f32"))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                                              "torch_ddp")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(41)
    n = STEPS * GLOBAL_BATCH
    rng.integers(0, 256, size=n * IMAGE * IMAGE, dtype=np.uint8).tofile(os.path.join(out, "images.u8"))
    rng.integers(0, 10, size=n, dtype=np.uint8).tofile(os.path.join(out, "labels.u8"))
    torch.manual_seed(0)
    save_weights(Cnn(), os.path.join(out, "weights.f32"))

    single = Cnn()
    load_weights(single, os.path.join(out, "weights.f32"))
    x, y = load_data(out)
    train(single, x, y, 0, 1, GLOBAL_BATCH)
    save_weights(single, os.path.join(out, "expected_single.f32"))

    mp.spawn(ddp_worker, args=(2, free_port(), out), nprocs=2, join=True)
    print(f"wrote {out}: torch {torch.__version__}")


if __name__ == "__main__":
    main()
