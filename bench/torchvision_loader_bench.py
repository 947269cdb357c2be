#!/usr/bin/env python3
"""torchvision's input pipeline on an ImageFolder, the anchor `ddpx data-bench` runs in the same call.

    /usr/bin/python3 bench/torchvision_loader_bench.py DIR --size 224 --workers 1 --images 400 --transform train

ImageFolder (PIL decoding) + DataLoader(batch_size=32, num_workers=W, shuffle=True), the transform of
torchvision's ImageNet reference: train = RandomResizedCrop(size) + RandomHorizontalFlip + ToTensor + Normalize,
eval = Resize(int(size / 0.875)) + CenterCrop(size) + ToTensor + Normalize (antialiased bilinear, PIL's); with
--randaugment N,M the train transform gets RandAugment(num_ops=N, magnitude=M) after the flip, on the PIL image, as
torchvision's reference recipe (presets.py, --auto-augment ra --ra-magnitude M) places it; --trivial-augment
TrivialAugmentWide() (--auto-augment ta_wide), --auto-augment-policy P AutoAugment(AutoAugmentPolicy(P))
(--auto-augment imagenet), in the same place. Iterates
until --images images were delivered (whole epochs repeated as needed; one warm-up batch excluded) and prints one
JSON line: {"images": N, "seconds": S, "images_per_s": R, "cpu_seconds": C, "workers": W, "torch": version,
"torchvision": version}; C is the CPU time (user + system, from /proc) of the main process and the workers over the
same interval: the core-seconds the pipeline spent, which a loaded machine inflates less than the wall clock.
torch.set_num_threads(1) in every process, so W workers use W cores (plus the main process collating).
"""
import argparse
import json
import os
import time

import torch
import torchvision
from torchvision import datasets, transforms


def cpu_seconds(pids):
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / ticks


def automatic_augmentation(args):
    """The augmentation the flags name (one at most), or None."""
    if args.randaugment:
        num_ops, magnitude = (int(v) for v in args.randaugment.split(","))
        return transforms.RandAugment(num_ops=num_ops, magnitude=magnitude)
    if args.trivial_augment:
        return transforms.TrivialAugmentWide()
    if args.auto_augment_policy:
        return transforms.AutoAugment(transforms.AutoAugmentPolicy(args.auto_augment_policy))
    return None


def augment_only(args):
    crop = transforms.Compose([transforms.RandomResizedCrop(args.size), transforms.RandomHorizontalFlip()])
    plain = datasets.ImageFolder(args.dir)
    images = [crop(plain[i][0]) for i in range(min(args.batch, len(plain)))]
    augment = automatic_augmentation(args)
    start, cpu_start = time.perf_counter(), time.process_time()
    for i in range(args.images):
        augment(images[i % len(images)])
    seconds, spent = time.perf_counter() - start, time.process_time() - cpu_start
    print(json.dumps({"images": args.images, "seconds": seconds, "images_per_s": args.images / seconds,
                      "cpu_seconds": spent, "workers": 0, "torch": torch.__version__,
                      "torchvision": torchvision.__version__}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--transform", choices=["train", "eval", "augment-only"], default="train",
                        help="augment-only: the augmentation (--randaugment, --trivial-augment or "
                             "--auto-augment-policy) alone, in this process, on the train transform's outputs of the "
                             "first --batch images (PIL, size x size), --images times")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--randaugment", help="N,M: RandAugment(num_ops=N, magnitude=M) after the flip (train only)")
    parser.add_argument("--trivial-augment", action="store_true", help="TrivialAugmentWide() after the flip")
    parser.add_argument("--auto-augment-policy", choices=["imagenet", "cifar10", "svhn"],
                        help="AutoAugment(AutoAugmentPolicy(P)) after the flip")
    args = parser.parse_args()
    torch.set_num_threads(1)
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    if args.transform == "train":
        steps = [transforms.RandomResizedCrop(args.size), transforms.RandomHorizontalFlip()]
        augment = automatic_augmentation(args)
        if augment is not None:
            steps.append(augment)
        transform = transforms.Compose(steps + [transforms.ToTensor(), normalize])
    else:
        transform = transforms.Compose([transforms.Resize(int(args.size / 0.875)), transforms.CenterCrop(args.size),
                                        transforms.ToTensor(), normalize])
    if args.transform == "augment-only":
        return augment_only(args)
    dataset = datasets.ImageFolder(args.dir, transform)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                         worker_init_fn=lambda _: torch.set_num_threads(1), persistent_workers=True,
                                         drop_last=True)
    delivered, start, pids, cpu_start = 0, None, [], 0.0
    while delivered < args.images:
        for images, _ in loader:
            if start is None:  # the first batch pays for starting the workers
                start = time.perf_counter()
                pids = [os.getpid()] + [w.pid for w in getattr(loader._iterator, "_workers", [])]
                cpu_start = cpu_seconds(pids)
                continue
            delivered += images.shape[0]
            if delivered >= args.images:
                break
    seconds = time.perf_counter() - start
    spent = cpu_seconds(pids) - cpu_start
    print(json.dumps({"images": delivered, "seconds": seconds, "images_per_s": delivered / seconds, "cpu_seconds": spent,
                      "workers": args.workers, "torch": torch.__version__, "torchvision": torchvision.__version__}))


if __name__ == "__main__":
    main()
