#!/usr/bin/env python3
"""Writes Fashion-MNIST (Debian's dataset-fashion-mnist idx files) as an ImageFolder and as WebDataset shards, with
the standard library only (gzip, zlib, tarfile): for bench/wds-sorted-shard.sh.

    python3 bench/fashion_files.py folder OUT_DIR [--split train|test] [--count N]
    python3 bench/fashion_files.py shard OUT.tar [--split train|test] [--count N] [--class-sorted]

folder: OUT_DIR/<label>/<100000 + index>.png (class folders 0..9, so a folder's labels are idx's).
shard: one tar of KEY.png + KEY.cls (KEY = sample<100000 + index>), in the stored order or, with --class-sorted, all
of class 0 first, then class 1, ... (stable within a class). The PNGs are 8-bit gray and lossless: every source
decodes to idx's pixels, as tests/train/fashion_files.hpp writes them for the tests.
"""
import argparse
import gzip
import io
import os
import struct
import tarfile
import zlib

FASHION = "/usr/share/datasets/fashion-mnist"


def read_idx(split):
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(os.path.join(FASHION, prefix + "-images-idx3-ubyte.gz")) as f:
        _, count, rows, cols = struct.unpack(">IIII", f.read(16))
        pixels = f.read(count * rows * cols)
    with gzip.open(os.path.join(FASHION, prefix + "-labels-idx1-ubyte.gz")) as f:
        f.read(8)
        labels = f.read(count)
    return count, rows, cols, pixels, labels


def png(gray, rows, cols):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + gray[r * cols:(r + 1) * cols] for r in range(rows))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", cols, rows, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["folder", "shard"])
    parser.add_argument("out")
    parser.add_argument("--split", choices=["train", "test"], default="train")
    parser.add_argument("--count", type=int, default=0, help="the first N images (0: all)")
    parser.add_argument("--class-sorted", action="store_true")
    args = parser.parse_args()
    count, rows, cols, pixels, labels = read_idx(args.split)
    n = min(args.count, count) if args.count > 0 else count
    order = list(range(n))
    if args.class_sorted:
        order.sort(key=lambda i: labels[i])
    size = rows * cols
    if args.kind == "folder":
        for c in range(10):
            os.makedirs(os.path.join(args.out, str(c)), exist_ok=True)
        for i in order:
            with open(os.path.join(args.out, str(labels[i]), "%d.png" % (100000 + i)), "wb") as f:
                f.write(png(pixels[i * size:(i + 1) * size], rows, cols))
        return
    with tarfile.open(args.out, "w", format=tarfile.USTAR_FORMAT) as tar:
        for i in order:
            key = "sample%d" % (100000 + i)
            for name, data in ((key + ".png", png(pixels[i * size:(i + 1) * size], rows, cols)),
                               (key + ".cls", b"%d\n" % labels[i])):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


if __name__ == "__main__":
    main()
