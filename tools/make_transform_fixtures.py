#!/usr/bin/env python3
"""Dumps torchvision's outputs of the image transforms ddpx reimplements, for tests/data/test_image_transform.cpp.

    /usr/bin/python3 tools/make_transform_fixtures.py --out tests/fixtures/transforms_torchvision.json

Cases (uint8 HWC inputs drawn from a fixed numpy seed: smooth gradients plus noise, so both flat and sharp regions
are covered), each with fixed crop parameters so no random draw is compared:
  - resized_crop: torchvision.transforms.functional.resized_crop(img, top, left, h, w, [out, out],
    antialias=True) on a uint8 CHW tensor: RandomResizedCrop's body once its box is drawn. Shrinking (box larger
    than the output), enlarging and a non-square box.
  - resize_center_crop: F.center_crop(F.resize(img, resize, antialias=True), size): the eval transform.
  - grayscale: F.rgb_to_grayscale on a PIL image (PIL's convert("L")), the 3 -> 1 channel conversion.
The JSON holds the torch/torchvision versions, then per case the input (flattened HWC), its shape, the
parameters and torchvision's output (flattened HWC). Kept small: inputs at most 32x32x3.

With --images DIR it also writes small encoded images cut from skimage's astronaut photograph (a real photograph:
noise decodes differently) and what PIL decodes from each, for tests/data/test_image_decode.cpp: baseline,
progressive, gray and CMYK (Adobe, as PIL writes it) JPEGs, 4:2:0 and 4:4:4; RGB, RGBA, gray and palette PNGs.
DIR/decoded.json maps each file to PIL's Image.open(f).convert("RGB" or "L") pixels (HWC, flattened).
"""
import argparse
import json

import numpy as np
import torch
import torchvision
import torchvision.transforms.functional as F
from PIL import Image


def image(rng, height, width, channels):
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([(x * 255 / width), (y * 255 / height), ((x + y) * 127 / (width + height) + 64)], -1)[..., :channels]
    noisy = base + rng.normal(0, 40, base.shape)
    return np.clip(np.rint(noisy), 0, 255).astype(np.uint8)


def chw(hwc):
    return torch.from_numpy(hwc).permute(2, 0, 1).contiguous()


def hwc(tensor):
    return tensor.permute(1, 2, 0).contiguous().numpy()


def write_images(directory):
    import os
    photo = Image.open("/usr/lib/python3/dist-packages/skimage/data/astronaut.png").convert("RGB")
    small = photo.crop((190, 80, 190 + 27, 80 + 19))  # part of the face: edges and smooth skin; odd sizes
    os.makedirs(directory, exist_ok=True)
    files = {
        "baseline_420.jpg": lambda f: small.save(f, "JPEG", quality=90),
        "baseline_444.jpg": lambda f: small.save(f, "JPEG", quality=90, subsampling=0),
        "progressive.jpg": lambda f: small.save(f, "JPEG", quality=85, progressive=True),
        "gray.jpg": lambda f: small.convert("L").save(f, "JPEG", quality=90),
        "cmyk.jpg": lambda f: small.convert("CMYK").save(f, "JPEG", quality=90),
        "rgb.png": lambda f: small.save(f, "PNG"),
        "gray.png": lambda f: small.convert("L").save(f, "PNG"),
        "palette.png": lambda f: small.convert("P", palette=Image.ADAPTIVE, colors=16).save(f, "PNG"),
        "rgba.png": lambda f: small.convert("RGBA").save(f, "PNG"),
    }
    decoded = {}
    for name, write in files.items():
        path = os.path.join(directory, name)
        write(path)
        image = Image.open(path)
        mode = "L" if image.mode == "L" else "RGB"
        pixels = np.asarray(image.convert(mode))
        decoded[name] = {"height": pixels.shape[0], "width": pixels.shape[1], "channels": 1 if mode == "L" else 3,
                         "pixels": pixels.ravel().tolist()}
    with open(os.path.join(directory, "decoded.json"), "w") as f:
        json.dump(decoded, f, separators=(",", ":"))
        f.write("\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--images")
    args = parser.parse_args()
    if args.images:
        write_images(args.images)
    rng = np.random.RandomState(2026)
    cases = []
    for height, width, channels, top, left, h, w, out in [
        (32, 28, 3, 4, 2, 25, 21, 12),  # shrink ~2x, non-square box
        (32, 28, 3, 0, 0, 32, 28, 10),  # the whole image
        (24, 30, 3, 5, 9, 7, 10, 16),   # enlarge
        (26, 30, 1, 2, 5, 20, 22, 6),   # gray, shrink ~3.5x
    ]:
        src = image(rng, height, width, channels)
        dst = F.resized_crop(chw(src), top, left, h, w, [out, out], antialias=True)
        cases.append({"kind": "resized_crop", "shape": [height, width, channels], "input": src.ravel().tolist(),
                      "top": top, "left": left, "height": h, "width": w, "size": out,
                      "output": hwc(dst).ravel().tolist()})
    for height, width, resize, size in [(32, 26, 18, 14), (26, 32, 15, 12), (25, 31, 20, 18), (16, 16, 16, 16)]:
        src = image(rng, height, width, 3)
        dst = F.center_crop(F.resize(chw(src), resize, antialias=True), size)
        cases.append({"kind": "resize_center_crop", "shape": [height, width, 3], "input": src.ravel().tolist(),
                      "resize": resize, "size": size, "output": hwc(dst).ravel().tolist()})
    src = image(rng, 9, 11, 3)
    gray = np.asarray(Image.fromarray(src).convert("L"))
    cases.append({"kind": "grayscale", "shape": [9, 11, 3], "input": src.ravel().tolist(),
                  "output": gray.ravel().tolist()})
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "torchvision": torchvision.__version__, "cases": cases}, f,
                  separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
