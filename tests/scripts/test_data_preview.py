#!/usr/bin/env python3
"""`ddpx data-preview`: the batch it draws and dumps is the loader's, and with --eval it is torchvision's.

On a made-up image folder (2 classes; PNGs and a JPEG of several sizes, smooth gradients plus noise):
  - --eval --dump/--dump-labels: the float32 [N, C, H, W] tensor is torchvision's ImageFolder eval transform
    (Resize(int(32 / 0.875)) + CenterCrop(32) + ToTensor + Normalize, on PIL images) within 1 level, in the folder's
    order, and the labels are ImageFolder's;
  - the grid PNG has the size its layout gives, each tile holds the dumped image's pixels, and the tile list (.json)
    names each tile's sample, label and class;
  - the train transform is a pure function of --seed (same bytes twice, different with another seed);
  - a large JPEG at 32 pixels: with --jpeg-scaled-decode off its eval tensor is torchvision's within 1 level; on
    (the default: decoded at reduced scale) it differs, within the documented 1.5 levels on average;
  - --trivial-augment / --auto-augment-policy imagenet --random-erase 1: the transform names them; each erased box
    the tile list gives is 0 in the dumped tensor (after Normalize), the mean colour in the grid, and the rest of
    the dumped image is the un-erased one's; --random-erase with --eval, and two policies, are refused;
  - a bad --count is refused naming the flag.
Needs numpy, PIL and torchvision (Debian's /usr/bin/python3 has them: the script re-runs itself there); skips (77)
without them. Usage: test_data_preview.py DDPX_BINARY"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torchvision.transforms as T
    from PIL import Image
except ImportError:
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("SKIP: numpy, PIL and torchvision are needed (Debian: python3-torchvision)")
    sys.exit(77)

DDPX = sys.argv[1]
MEAN, STD = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
failures = []


def image(rng, height, width):
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 / width, y * 255 / height, (x + y) * 127 / (width + height) + 64], -1)
    return Image.fromarray(np.clip(np.rint(base + rng.normal(0, 25, base.shape)), 0, 255).astype(np.uint8))


def ddpx(*args):
    return subprocess.run([DDPX, "data-preview", *args], capture_output=True, text=True, timeout=120)


work = pathlib.Path(tempfile.mkdtemp(prefix="ddpx_data_preview_"))
try:
    rng = np.random.RandomState(50)
    files = []
    for label, name in enumerate(["bird", "cat"]):
        (work / "data" / name).mkdir(parents=True)
        for k, (height, width) in enumerate([(50, 70), (81, 64), (64, 64)]):
            path = work / "data" / name / (f"{k}.jpg" if k == 2 else f"{k}.png")
            image(rng, height, width).save(path, quality=95)
            files.append((path, label))
    count, size = 6, 32
    run = ddpx(f"folder:{work / 'data'}", "--eval", "--count", str(count), "--size", str(size),
               "--out", str(work / "grid.png"), "--dump", str(work / "x.npy"), "--dump-labels", str(work / "y.npy"))
    assert run.returncode == 0, run.stdout + run.stderr
    print(run.stdout)
    x, y = np.load(work / "x.npy"), np.load(work / "y.npy")
    if x.shape != (count, 3, size, size) or x.dtype != np.float32:
        failures.append(f"--dump is {x.dtype} {x.shape}, expected float32 {(count, 3, size, size)}")
    if y.dtype != np.int64 or y.tolist() != [label for _, label in files]:
        failures.append(f"--dump-labels {y.dtype} {y.tolist()}, expected ImageFolder's {[l for _, l in files]}")
    eval_transform = T.Compose([T.Resize(int(size / 0.875)), T.CenterCrop(size), T.ToTensor(),
                                T.Normalize(MEAN.tolist(), STD.tolist())])
    level = 1 / 255 / STD.min()
    for i, (path, _) in enumerate(files):
        theirs = eval_transform(Image.open(path).convert("RGB")).numpy()
        worst = float(np.abs(theirs - x[i]).max()) if x.shape[0] > i else float("inf")
        if worst > level * 1.001:
            failures.append(f"{path.name}: {worst / level:.2f} levels from torchvision's eval tensor")

    tiles = json.loads((work / "grid.json").read_text())
    if [t["sample"] for t in tiles["tiles"]] != [str(p) for p, _ in files]:
        failures.append(f"the tile list names {[t['sample'] for t in tiles['tiles']]}")
    if [(t["label"], t["class"]) for t in tiles["tiles"]] != [(l, ["bird", "cat"][l]) for _, l in files]:
        failures.append(f"the tile list's labels: {tiles['tiles']}")
    grid = np.asarray(Image.open(work / "grid.png").convert("RGB")).astype(int)
    columns, rows = 3, 2  # about square: ceil(sqrt(6))
    gap, caption = 4, 14
    want_shape = (gap + rows * (size + caption + gap), gap + columns * (size + gap), 3)
    if grid.shape != want_shape:
        failures.append(f"the grid is {grid.shape}, expected {want_shape}")
    else:
        for i in range(count):
            top, left = gap + (i // columns) * (size + caption + gap), gap + (i % columns) * (size + gap)
            tile = grid[top:top + size, left:left + size]
            pixels = (x[i].transpose(1, 2, 0) * STD + MEAN) * 255
            if np.abs(tile - pixels).max() > 0.51:
                failures.append(f"tile {i} does not hold the dumped image")
            strip = grid[top + size:top + size + caption, left:left + size]
            if (strip == 255).all(axis=2).sum() < 10:  # the class index's digits, in white
                failures.append(f"tile {i} has no caption")

    train = [ddpx(f"folder:{work / 'data'}", "--count", "4", "--size", "24", "--seed", seed,
                  "--out", str(work / f"train{k}.png"), "--dump", str(work / f"train{k}.npy"))
             for k, seed in enumerate(["7", "7", "8"])]
    assert all(r.returncode == 0 for r in train), [r.stderr for r in train]
    first, again, other = (np.load(work / f"train{k}.npy") for k in range(3))
    if not np.array_equal(first, again):
        failures.append("the train transform differs between two runs with the same --seed")
    if np.array_equal(first, other):
        failures.append("the train transform is the same under another --seed")

    big = work / "big" / "photo" / "big.jpg"
    big.parent.mkdir(parents=True)
    image(rng, 420, 520).save(big, quality=90)
    tensors = {}
    for mode in ("off", "on"):
        run = ddpx(f"folder:{work / 'big'}", "--eval", "--count", "1", "--size", str(size), "--jpeg-scaled-decode", mode,
                   "--out", str(work / f"big_{mode}.png"), "--dump", str(work / f"big_{mode}.npy"))
        assert run.returncode == 0, run.stdout + run.stderr
        tensors[mode] = np.load(work / f"big_{mode}.npy")[0]
    theirs = eval_transform(Image.open(big).convert("RGB")).numpy()
    levels = {mode: np.abs(theirs - t) / level for mode, t in tensors.items()}
    print(f"big JPEG at {size}: full-size decode max {levels['off'].max():.2f} levels from torchvision; scaled decode "
          f"mean {levels['on'].mean():.2f}, max {levels['on'].max():.2f}")
    if levels["off"].max() > 1.001:
        failures.append(f"--jpeg-scaled-decode off: {levels['off'].max():.2f} levels from torchvision")
    if np.array_equal(tensors["on"], tensors["off"]) or levels["on"].mean() >= 1.5:
        failures.append(f"--jpeg-scaled-decode on: mean {levels['on'].mean():.2f} levels (expected a scaled decode "
                        "within 1.5 levels on average)")

    for extra in (["--trivial-augment"], ["--auto-augment-policy", "imagenet"]):
        runs = [ddpx(f"folder:{work / 'data'}", "--count", "6", "--size", "24", "--seed", "3", *extra, *erase,
                     "--out", str(work / f"aug{k}.png"), "--dump", str(work / f"aug{k}.npy"))
                for k, erase in enumerate([[], ["--random-erase", "1"]])]
        assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
        name = "TrivialAugmentWide" if extra[0] == "--trivial-augment" else "AutoAugment(policy=imagenet)"
        if name not in runs[0].stdout or "RandomErasing(p=1)" not in runs[1].stdout:
            failures.append(f"{extra}: the transform does not name the augmentations: {runs[1].stdout}")
        plain, erased = np.load(work / "aug0.npy"), np.load(work / "aug1.npy")
        tiles = json.loads((work / "aug1.json").read_text())["tiles"]
        grid = np.asarray(Image.open(work / "aug1.png").convert("RGB")).astype(int)
        boxes = 0
        for i, tile in enumerate(tiles):
            mask = np.zeros((24, 24), bool)
            if "erased" in tile:
                box = tile["erased"]
                mask[box["top"]:box["top"] + box["height"], box["left"]:box["left"] + box["width"]] = True
                boxes += 1
                top, left = gap + (i // 3) * (24 + caption + gap), gap + (i % 3) * (24 + gap)
                painted = grid[top:top + 24, left:left + 24][mask]
                if not (painted == np.rint(MEAN * 255)).all():
                    failures.append(f"{extra} tile {i}: the erased box is not the mean colour in the grid")
            if not (erased[i][:, mask] == 0).all() or not np.array_equal(erased[i][:, ~mask], plain[i][:, ~mask]):
                failures.append(f"{extra} tile {i}: the dump is not the un-erased image with the box at 0")
        if boxes < 5:  # p = 1: a 24 x 24 image finds a box in ten tries nearly always
            failures.append(f"{extra}: only {boxes} of 6 tiles erased with --random-erase 1")
    for args, flag in ((["--eval", "--random-erase", "0.5"], "--random-erase"),
                       (["--trivial-augment", "--randaugment", "2,9"], "--randaugment 2,9 and --trivial-augment")):
        refused = ddpx(f"folder:{work / 'data'}", *args, "--out", str(work / "refused.png"))
        if refused.returncode != 2 or flag not in refused.stderr:
            failures.append(f"{args}: status {refused.returncode}, {refused.stderr.strip()}")

    bad = ddpx(f"folder:{work / 'data'}", "--count", "0", "--out", str(work / "bad.png"))
    if bad.returncode != 2 or "--count 0" not in bad.stderr:
        failures.append(f"--count 0: status {bad.returncode}, {bad.stderr.strip()}")
finally:
    shutil.rmtree(work, ignore_errors=True)

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
