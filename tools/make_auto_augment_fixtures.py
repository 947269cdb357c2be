#!/usr/bin/env python3
"""Dumps torchvision's TrivialAugmentWide, AutoAugment and RandomErasing for tests/data/test_auto_augment.cpp and
tests/data/test_random_erasing.cpp.

    /usr/bin/python3 tools/make_auto_augment_fixtures.py --out tests/fixtures/auto_augment_torchvision.json

The images are tools/make_rand_augment_fixtures.py's (two photograph crops, noise, a gray crop; odd, non-square
sizes), so the two fixtures share them.

"ops": torchvision.transforms.autoaugment._apply_op(img, op, magnitude, NEAREST, fill=None) on the uint8 CHW tensor,
the call TrivialAugmentWide.forward and AutoAugment.forward make once they have drawn, with the magnitudes their
own tables give:
  - "wide": TrivialAugmentWide()._augmentation_space(31) at bins 3, 15 and 30 (0 and 30 for the photometric ops:
    bin 0 is the identity there) with both signs for the signed ops (shear 0.99, rotate 135, posterize to 2 bits);
  - "autoaugment": AutoAugment()._augmentation_space(10, (h, w)) at every (op, bin) the three policies use, both
    signs for the signed ones, and Invert.
"tables": the magnitudes of TrivialAugmentWide (all 31 bins of every op; no image size in them) and AutoAugment
(10 bins, every op, for several sizes since the translations depend on them), as float32 values.
"policies": AutoAugment(policy).policies for imagenet, cifar10 and svhn: [op, probability, bin or null] pairs.
"erasing": RandomErasing.get_params(img, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=[0]) for many seeds and image
sizes, with the draws it made (Tensor.uniform_ and torch.randint, recorded as they return): each case holds the
image's height and width, the draws in order ({"uniform": [lo, hi, value]} or {"randint": [high, value]}) and the
box (i, j, h, w) it returned ((0, 0, height, width) when all ten tries missed).
"""
import argparse
import base64
import json
import os
import sys

import torch
import torchvision
from torchvision.transforms import InterpolationMode, RandomErasing
from torchvision.transforms.autoaugment import AutoAugment, AutoAugmentPolicy, TrivialAugmentWide, _apply_op

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_rand_augment_fixtures import chw, images  # noqa: E402  (the same images)

GEOMETRIC = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"}
POLICIES = [AutoAugmentPolicy.IMAGENET, AutoAugmentPolicy.CIFAR10, AutoAugmentPolicy.SVHN]


def output(picture, name, magnitude):
    out = _apply_op(chw(picture), name, magnitude, interpolation=InterpolationMode.NEAREST, fill=None)
    return base64.b64encode(out.permute(1, 2, 0).numpy().tobytes()).decode()


def op_cases(pictures):
    cases = []
    wide = TrivialAugmentWide()._augmentation_space(31)
    policy_bins = {}
    for policy in POLICIES:
        for sub in AutoAugment(policy).policies:
            for name, _, magnitude_bin in sub:
                policy_bins.setdefault(name, set()).add(magnitude_bin)
    for index, picture in enumerate(pictures):
        height, width = picture.shape[:2]
        for name, (magnitudes, signed) in wide.items():
            bins = [0] if magnitudes.ndim == 0 else [3, 15, 30] if name in GEOMETRIC else [0, 30]
            for magnitude_bin in bins:
                for sign in ([1, -1] if signed else [1]):
                    magnitude = sign * (float(magnitudes[magnitude_bin].item()) if magnitudes.ndim > 0 else 0.0)
                    cases.append({"table": "wide", "image": index, "op": name, "bin": magnitude_bin, "sign": sign,
                                  "magnitude": magnitude, "output": output(picture, name, magnitude)})
        space = AutoAugment()._augmentation_space(10, (height, width))
        for name in sorted(policy_bins):
            magnitudes, signed = space[name]
            for magnitude_bin in sorted(policy_bins[name], key=lambda b: -1 if b is None else b):
                for sign in ([1, -1] if signed else [1]):
                    magnitude = float(magnitudes[magnitude_bin].item()) if magnitude_bin is not None else 0.0
                    magnitude *= sign
                    cases.append({"table": "autoaugment", "image": index, "op": name,
                                  "bin": -1 if magnitude_bin is None else magnitude_bin, "sign": sign,
                                  "magnitude": magnitude, "output": output(picture, name, magnitude)})
    return cases


def tables():
    def values(m):
        return [float(v) for v in m.tolist()] if m.ndim > 0 else [float(m.item())]

    out = {"wide": {name: values(m) for name, (m, _) in TrivialAugmentWide()._augmentation_space(31).items()},
           "autoaugment": []}
    for height, width in [(19, 23), (21, 18), (28, 28), (32, 32), (224, 224), (160, 200), (384, 384), (333, 331)]:
        out["autoaugment"].append({"height": height, "width": width,
                                   "magnitudes": {name: values(m) for name, (m, _) in
                                                  AutoAugment()._augmentation_space(10, (height, width)).items()}})
    return out


def erasing_cases():
    draws = []
    real_uniform, real_randint = torch.Tensor.uniform_, torch.randint

    def uniform(self, low, high, *rest, **kw):
        result = real_uniform(self, low, high, *rest, **kw)
        draws.append({"uniform": [float(low), float(high), float(result.item())]})
        return result

    def randint(low, high, size, **kw):
        result = real_randint(low, high, size, **kw)
        draws.append({"randint": [int(high - low), int(result.item())]})
        assert low == 0
        return result

    cases = []
    torch.Tensor.uniform_, torch.randint = uniform, randint
    try:
        sizes = [(224, 224), (28, 28), (32, 32), (19, 23), (7, 5), (3, 3), (2, 9), (1, 1), (160, 200), (384, 300)]
        for height, width in sizes:
            img = torch.zeros(3, height, width)
            for seed in range(60):
                torch.manual_seed(1000 * height + seed)
                del draws[:]
                i, j, h, w, _ = RandomErasing.get_params(img, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=[0])
                cases.append({"height": height, "width": width, "draws": list(draws), "box": [i, j, h, w]})
    finally:
        torch.Tensor.uniform_, torch.randint = real_uniform, real_randint
    return cases


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    pictures = images()
    policies = {policy.value: [[[name, p, magnitude_bin] for name, p, magnitude_bin in sub]
                               for sub in AutoAugment(policy).policies] for policy in POLICIES}
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "torchvision": torchvision.__version__,
                   "images": [{"shape": list(p.shape), "pixels": p.ravel().tolist()} for p in pictures],
                   "cases": op_cases(pictures), "tables": tables(), "policies": policies,
                   "log_ratio": [float(v) for v in torch.log(torch.tensor((0.3, 3.3))).tolist()],
                   "erasing": erasing_cases()}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
