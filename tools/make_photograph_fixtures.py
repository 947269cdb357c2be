#!/usr/bin/env python3
"""Dumps torchvision's eval transform of real photographs, for tests/data/test_photograph_pixels.cpp.

    /usr/bin/python3 tools/make_photograph_fixtures.py --out tests/fixtures/photographs

The photographs are scikit-image's (Debian python3-skimage, /usr/lib/python3/dist-packages/skimage/data): its
three JPEGs (hubble_deep_field, retina, rocket: decoded by PIL with the system's libjpeg-turbo, as ddpx decodes
them) and four PNG photographs. For each photograph and size S in SIZES, OUT/<stem>_<S>.png holds torchvision's
reference-script eval transform of it, as ImageFolder loads it:

    T.Compose([T.Resize(int(S / 0.875)), T.CenterCrop(S)])(Image.open(f).convert("RGB"))

(torchvision's PIL path: PIL's antialiased BILINEAR resize). OUT/photographs.json records the file sizes of the
photographs (the test skips one whose file differs), the eval resize side int(s / 0.875) for s in 1..1024, and
two 16-bit PNGs written here (OUT/gray16.png, OUT/rgb16.png) with PIL's convert("RGB") of each and their high
bytes: PIL reads 16-bit RGB from the high byte and clips 16-bit gray to 255.
"""
import argparse
import json
import os
import struct
import zlib

import numpy as np
import torchvision
import torchvision.transforms as T
from PIL import Image

SKIMAGE = "/usr/lib/python3/dist-packages/skimage/data/"
# (file, sizes): 224 on two photographs only, to keep the fixtures small.
PHOTOGRAPHS = [
    ("rocket.jpg", [224, 64, 32]),
    ("coffee.png", [224, 64, 32]),
    ("hubble_deep_field.jpg", [64, 32]),
    ("retina.jpg", [64, 32]),
    ("astronaut.png", [64, 32]),
    ("chelsea.png", [64, 32]),
    ("motorcycle_left.png", [64, 32]),
]


def png_16bit(path, pixels, color_type):
    """A 16-bit PNG by hand (PIL writes 16-bit gray only): pixels is uint16 HxW or HxWx3."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    height, width = pixels.shape[:2]
    raw = b"".join(b"\x00" + pixels[y].astype(">u2").tobytes() for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 16, color_type, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    photographs = {}
    for name, sizes in PHOTOGRAPHS:
        path = SKIMAGE + name
        image = Image.open(path).convert("RGB")
        for size in sizes:
            transform = T.Compose([T.Resize(int(size / 0.875)), T.CenterCrop(size)])
            stem = os.path.splitext(name)[0]
            transform(image).save(os.path.join(args.out, f"{stem}_{size}.png"))
        photographs[name] = {"bytes": os.path.getsize(path), "width": image.width, "height": image.height,
                             "sizes": sizes}
    sixteen = {}
    rng = np.random.RandomState(50)
    for name, shape, color_type in [("gray16.png", (5, 7), 0), ("rgb16.png", (5, 7, 3), 2)]:
        values = rng.randint(0, 65536, size=shape).astype(np.uint16)
        values.flat[0], values.flat[1] = 0, 65535
        png_16bit(os.path.join(args.out, name), values, color_type)
        pil = np.asarray(Image.open(os.path.join(args.out, name)).convert("RGB"))
        high = values >> 8
        sixteen[name] = {"pil_rgb": pil.ravel().tolist(),
                         "high_byte": (np.repeat(high[..., None], 3, -1) if high.ndim == 2 else high).ravel().tolist()}
    with open(os.path.join(args.out, "photographs.json"), "w") as f:
        json.dump({"torchvision": torchvision.__version__, "photographs": photographs,
                   "eval_resize": [int(s / 0.875) for s in range(1, 1025)], "sixteen_bit": sixteen}, f,
                  separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
