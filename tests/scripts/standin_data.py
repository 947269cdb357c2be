"""Small stand-in data of every `ddpx train` source, written with the standard library only (no numpy, no PIL), for
the tests that run `ddpx` as a user would (test_docs_examples.py, test_train_flag_fuzz.py).

Guarantees: make_standin_data(ddpx, root) writes, under root, and returns the paths of
  idx      a copy of the first images of Debian's Fashion-MNIST (/usr/share/datasets/fashion-mnist) as plain idx
           files, train and t10k (or, without that package, the same shape of random images; `real_fashion_mnist`
           says which);
  folder   an ImageFolder tree of PNGs (3 classes, 8 images each, 20x24 RGB), and `folder_val` with the same classes;
  pack     `ddpx pack` of that folder (made by the ddpx under test);
  wds      one WebDataset tar shard of the same images (KEY.png + KEY.cls) with classes.txt beside it;
  npy      float32 images [N, 3, 16, 16] and int64 labels [N] (.npy v1.0), the shape of mlp_tiny_test.
Every file is a pure function of its index: the same bytes on every run. Nothing is written outside root.
"""
import gzip
import io
import os
import random
import struct
import subprocess
import tarfile
import zlib

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
CLASSES = ["cat", "dog", "fox"]
IMAGES_PER_CLASS = 8
IDX_TRAIN, IDX_TEST = 64, 32
NPY_SAMPLES, NPY_SHAPE = 32, (3, 16, 16)


def png_bytes(width, height, pixel):
    """An 8-bit RGB PNG whose pixel (x, y) is pixel(x, y) -> (r, g, b)."""
    raw = b"".join(b"\x00" + bytes(c for x in range(width) for c in pixel(x, y)) for y in range(height))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def sample_png(label, index):
    rng = random.Random(label * 1000 + index)
    base = [(200, 40, 40), (40, 200, 40), (40, 40, 200)][label % 3]
    return png_bytes(24, 20, lambda x, y: tuple(min(255, c + rng.randrange(40)) for c in base))


def write_folder(root):
    for label, name in enumerate(CLASSES):
        os.makedirs(os.path.join(root, name), exist_ok=True)
        for i in range(IMAGES_PER_CLASS):
            with open(os.path.join(root, name, f"{i:03d}.png"), "wb") as f:
                f.write(sample_png(label, i))
    return root


def write_wds(shard):
    with tarfile.open(shard, "w") as tar:
        for i in range(IMAGES_PER_CLASS):
            for label in range(len(CLASSES)):  # interleaved classes, as a shuffled shard
                key = f"s{label}{i:03d}"
                for name, data in ((key + ".png", sample_png(label, i)), (key + ".cls", str(label).encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    with open(os.path.join(os.path.dirname(shard), "classes.txt"), "w") as f:
        f.write("\n".join(CLASSES) + "\n")
    return "wds:" + shard


def read_idx(path, count):
    """The first `count` items of an idx file (.gz): (header dims, raw bytes)."""
    with gzip.open(path, "rb") as f:
        magic, = struct.unpack(">I", f.read(4))
        dims = [struct.unpack(">I", f.read(4))[0] for _ in range(magic & 0xFF)]
        item = 1
        for d in dims[1:]:
            item *= d
        return dims[1:], f.read(item * count)


def write_idx(path, magic_dims, data):
    with open(path, "wb") as f:
        f.write(struct.pack(">I", 0x0800 | len(magic_dims)))
        for d in magic_dims:
            f.write(struct.pack(">I", d))
        f.write(data)


def write_idx_dir(root):
    os.makedirs(root, exist_ok=True)
    real = os.path.isdir(FASHION_MNIST)
    for prefix, count in (("train", IDX_TRAIN), ("t10k", IDX_TEST)):
        if real:
            dims, images = read_idx(os.path.join(FASHION_MNIST, f"{prefix}-images-idx3-ubyte.gz"), count)
            _, labels = read_idx(os.path.join(FASHION_MNIST, f"{prefix}-labels-idx1-ubyte.gz"), count)
        else:
            rng = random.Random(count)
            dims, images = [28, 28], bytes(rng.randrange(256) for _ in range(count * 784))
            labels = bytes(i % 10 for i in range(count))
        write_idx(os.path.join(root, f"{prefix}-images-idx3-ubyte"), [count] + dims, images)
        write_idx(os.path.join(root, f"{prefix}-labels-idx1-ubyte"), [count], labels)
    return root, real


def write_npy(path, dtype, shape, values):
    shape_text = f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(str(d) for d in shape) + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (dtype, shape_text)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(values)
    return path


def write_npy_pair(root):
    rng = random.Random(7)
    count = NPY_SAMPLES
    for d in NPY_SHAPE:
        count *= d
    images = struct.pack(f"<{count}f", *(rng.gauss(0, 1) for _ in range(count)))
    labels = struct.pack(f"<{NPY_SAMPLES}q", *(i % 10 for i in range(NPY_SAMPLES)))
    return (write_npy(os.path.join(root, "images.npy"), "<f4", (NPY_SAMPLES,) + NPY_SHAPE, images),
            write_npy(os.path.join(root, "labels.npy"), "<i8", (NPY_SAMPLES,), labels))


def make_standin_data(ddpx, root):
    os.makedirs(root, exist_ok=True)
    idx_dir, real = write_idx_dir(os.path.join(root, "idx"))
    folder = write_folder(os.path.join(root, "photos", "train"))
    folder_val = write_folder(os.path.join(root, "photos", "val"))
    os.makedirs(os.path.join(root, "shards"), exist_ok=True)
    wds = write_wds(os.path.join(root, "shards", "train-000000.tar"))
    pack = os.path.join(root, "train.pack")
    made = subprocess.run([ddpx, "pack", "folder:" + folder, pack, "--max-side", "32", "--store", "raw"],
                          capture_output=True, text=True, timeout=120)
    if made.returncode != 0:
        raise RuntimeError(f"ddpx pack of the stand-in folder failed ({made.returncode}): {made.stderr}")
    images, labels = write_npy_pair(root)
    return {"idx": idx_dir, "real_fashion_mnist": real, "folder": folder, "folder_val": folder_val, "pack": pack,
            "wds": wds, "images": images, "labels": labels}
