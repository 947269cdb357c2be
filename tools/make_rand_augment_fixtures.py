#!/usr/bin/env python3
"""Dumps torchvision's RandAugment ops for tests/data/test_rand_augment.cpp.

    /usr/bin/python3 tools/make_rand_augment_fixtures.py --out tests/fixtures/rand_augment_torchvision.json

Images (uint8, as ddpx's loader holds them after the crop): small crops of skimage's astronaut and chelsea
photographs (edges, skin, fur, flat background), a random image (every level, no structure), and the astronaut crop
as one channel (the gray path). Sizes are odd and non-square so centres fall between pixels.

Each case is torchvision.transforms.autoaugment._apply_op(img, op, magnitude, NEAREST, fill=None) on the uint8 CHW
tensor: the very call RandAugment.forward makes once it has drawn the op and the sign, with the magnitude taken from
RandAugment()._augmentation_space(31, (height, width)) at the bin, negated for the negative sign of a signed op.
Bins 0, 9 (torchvision's default magnitude) and 30 for the others, 3, 9 and 30 for the geometric ones (bin 0 is
the identity there). Outputs are base64 of the HWC bytes, to keep the file small.

"tables" holds _augmentation_space's magnitudes (all 31 bins, as float32 values): every op's for the first size,
TranslateX and TranslateY (which depend on the size) for many sizes, so the float32 linspace emulation is checked
where int() of a translation depends on its last bit.
The JSON holds the torch/torchvision versions, the images (flattened HWC) and, per case, the image's index, the
op's name, bin, sign, the magnitude passed and torchvision's output (flattened HWC).
"""
import argparse
import base64
import json

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms.autoaugment import RandAugment, _apply_op

SKIMAGE = "/usr/lib/python3/dist-packages/skimage/data/"


def images():
    astronaut = Image.open(SKIMAGE + "astronaut.png").convert("RGB")
    chelsea = Image.open(SKIMAGE + "chelsea.png").convert("RGB")
    face = np.asarray(astronaut.crop((180, 70, 180 + 23, 70 + 19)))  # 19 x 23: face and hair edges
    cat = np.asarray(chelsea.crop((140, 60, 140 + 18, 60 + 21)))  # 21 x 18: eye, fur
    noise = np.random.RandomState(39).randint(0, 256, (16, 19, 3)).astype(np.uint8)
    gray = np.asarray(astronaut.crop((190, 80, 190 + 21, 80 + 17)).convert("L"))[..., None]
    return [face, cat, noise, gray]


def chw(hwc):
    return torch.from_numpy(np.ascontiguousarray(hwc)).permute(2, 0, 1).contiguous()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    space = RandAugment()._augmentation_space
    geometric = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"}
    pictures = images()
    cases = []
    for index, picture in enumerate(pictures):
        height, width = picture.shape[:2]
        ops = space(31, (height, width))
        for name, (magnitudes, signed) in ops.items():
            bins = [3, 9, 30] if name in geometric else [0, 9, 30]
            if magnitudes.ndim == 0:
                bins = [0]
            for magnitude_bin in bins:
                for sign in ([1, -1] if signed else [1]):
                    magnitude = float(magnitudes[magnitude_bin].item()) if magnitudes.ndim > 0 else 0.0
                    magnitude *= sign
                    out = _apply_op(chw(picture), name, magnitude, interpolation=InterpolationMode.NEAREST, fill=None)
                    cases.append({"image": index, "op": name, "bin": magnitude_bin, "sign": sign,
                                  "magnitude": magnitude,
                                  "output": base64.b64encode(out.permute(1, 2, 0).numpy().tobytes()).decode()})
    sizes = sorted(set([(h, w) for h, w in [(28, 28), (32, 32), (224, 224), (256, 256), (384, 384), (21, 27),
                                            (25, 22), (16, 19), (19, 23)]] +
                       [(w + 3, w) for w in range(8, 400, 7)]))
    tables = []
    for height, width in sizes:
        ops = space(31, (height, width))
        tables.append({"height": height, "width": width,
                       "magnitudes": {name: [float(v) for v in m.tolist()] if m.ndim > 0 else [float(m.item())]
                                      for name, (m, _) in ops.items()
                                      if name.startswith("Translate") or (height, width) == sizes[0]}})
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "torchvision": torchvision.__version__,
                   "images": [{"shape": list(p.shape), "pixels": p.ravel().tolist()} for p in pictures],
                   "cases": cases, "tables": tables}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
