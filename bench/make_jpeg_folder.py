#!/usr/bin/env python3
"""Makes an ImageFolder of ImageNet-sized JPEGs from real photographs, for `ddpx data-bench` (and bench/data-bench.sh).

    /usr/bin/python3 bench/make_jpeg_folder.py OUT [--images 500] [--classes 10] [--quality 90]

The photographs are scikit-image's natural ones (Debian python3-skimage): astronaut, coffee, chelsea, rocket,
motorcycle left/right, retina, hubble_deep_field, camera (gray, saved as RGB). Each output image is a random crop
(40-100% of each side) of one of them, resized with PIL's bicubic to about ImageNet's typical 500x375 (landscape
or portrait, sides 333-500), flipped at random, saved as a baseline 4:2:0 JPEG at --quality (90 like ImageNet's
typical files). Noise is never used: it decodes at another rate than photographs. Deterministic for a --seed.
Writes OUT/class_KK/img_NNNNN.jpg, classes round-robin.
"""
import argparse
import os
import random

from PIL import Image

PHOTOS = ["astronaut.png", "coffee.png", "chelsea.png", "rocket.jpg", "motorcycle_left.png", "motorcycle_right.png",
          "retina.jpg", "hubble_deep_field.jpg", "camera.png"]
DATA = "/usr/lib/python3/dist-packages/skimage/data"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--images", type=int, default=500)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--quality", type=int, default=90)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    photos = [Image.open(os.path.join(DATA, name)).convert("RGB") for name in PHOTOS if os.path.exists(os.path.join(DATA, name))]
    if not photos:
        raise SystemExit(f"no photographs under {DATA}: apt-get install python3-skimage")
    for c in range(args.classes):
        os.makedirs(os.path.join(args.out, f"class_{c:02d}"), exist_ok=True)
    for i in range(args.images):
        photo = photos[i % len(photos)]
        w, h = photo.size
        cw, ch = int(w * rng.uniform(0.4, 1.0)), int(h * rng.uniform(0.4, 1.0))
        x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
        crop = photo.crop((x, y, x + cw, y + ch))
        long_side, short_side = 500, rng.randint(333, 400)
        size = (long_side, short_side) if rng.random() < 0.75 else (short_side, long_side)
        image = crop.resize(size, Image.BICUBIC)
        if rng.random() < 0.5:
            image = image.transpose(Image.FLIP_LEFT_RIGHT)
        image.save(os.path.join(args.out, f"class_{i % args.classes:02d}", f"img_{i:05d}.jpg"), "JPEG",
                   quality=args.quality)


if __name__ == "__main__":
    main()
