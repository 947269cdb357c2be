#!/usr/bin/env python3
"""Dumps PyTorch reference values for the CPU parity tests of the model families (tests/model/vit/
test_vit_fixture.cpp, tests/model/mlp/test_mlp_fixture.cpp).

Run where torch (and, for the ViT, torchvision) exist (the GPU machine; everything here runs on the CPU there):
    python3 tools/make_fixtures.py --out tests/fixtures/                # both fixtures
    python3 tools/make_fixtures.py --out tests/fixtures/ --models mlp   # torch alone is enough for the MLP

Writes <out>/<name>.safetensors and <out>/<name>.json per model:
  - vit_tiny_torchvision: torchvision's VisionTransformer(image_size=16, patch_size=4, num_layers=2, num_heads=4,
    hidden_dim=32, mlp_dim=64, num_classes=10), i.e. ddpx's "vit_tiny_test".
  - mlp_tiny_torch: the MLP classifier below (flatten, Linear + exact GELU x 2 of width 32, Linear head to 10
    classes over 16x16x3 images), i.e. ddpx's "mlp_tiny_test", built from torch.nn alone.
Guarantees of each fixture:
  - Inputs are exact in every precision: every weight and image value is drawn, then rounded to the float16 grid
    and stored as F16 (halves the file), so float32 and float64 runs start from identical values.
  - Reference outputs come from a float64 run (deterministic, CPU): logits [4, 10] and loss [1] as F64;
    "grad.<name>" (d mean cross-entropy / d weight) and "sgd3.<name>" (weights after 3 torch.optim.SGD steps,
    lr 0.1, momentum 0.9, weight_decay 1e-4, the same batch every step) rounded to F32 to keep the file small
    (relative rounding <= 2^-24); "sgd.losses" [3] F64 is the loss at the start of each SGD step.
  - The JSON records torch/torchvision versions and, per tensor, how far PyTorch's own float32 run is from the
    float64 one (max |g32 - g64| / max |g64|): the yardstick for the float32 tolerances in the C++ test.
The safetensors file is written here with struct + json (no safetensors or numpy package needed): an 8-byte
little-endian header length, a JSON header padded with spaces to a multiple of 8, then the raw little-endian data.
"""
import argparse
import json
import pathlib
import struct

import torch
import torch.nn.functional as F

CONFIG = dict(image_size=16, patch_size=4, num_layers=2, num_heads=4, hidden_dim=32, mlp_dim=64, num_classes=10)
MLP_CONFIG = dict(image_size=16, channels=3, layers=2, width=32, classes=10)  # ddpx's mlp_tiny_test
BATCH = 4
SEED = 20240611
SGD = dict(lr=0.1, momentum=0.9, weight_decay=1e-4)
SGD_STEPS = 3
NAME = "vit_tiny_torchvision"
MLP_NAME = "mlp_tiny_torch"


class Mlp(torch.nn.Module):
    """ddpx's MLP family (src/model/mlp/mlp_cpu.hpp): state_dict names hidden.<l>.weight/bias and head.weight/bias."""

    def __init__(self, image_size, channels, layers, width, classes):
        super().__init__()
        features = channels * image_size * image_size
        self.hidden = torch.nn.ModuleList(
            [torch.nn.Linear(features if l == 0 else width, width) for l in range(layers)])
        self.head = torch.nn.Linear(width, classes)

    def forward(self, images):
        x = images.flatten(1)
        for layer in self.hidden:
            x = F.gelu(layer(x))  # exact (erf) GELU, approximate='none'
        return self.head(x)


def vit_factory():
    from torchvision.models.vision_transformer import VisionTransformer  # only the ViT fixture needs torchvision
    return lambda: VisionTransformer(**CONFIG)

# dtype -> (safetensors name, struct format code)
FORMATS = {torch.float16: ("F16", "e"), torch.float32: ("F32", "f"), torch.float64: ("F64", "d"),
           torch.int64: ("I64", "q")}


def on_float16_grid(values):
    return values.to(torch.float16).to(torch.float32)


def random_weights(model, generator):
    """Non-zero random weights that keep activations O(1) and attention far from uniform."""
    layer_norms = {name for name, m in model.named_modules() if isinstance(m, torch.nn.LayerNorm)}
    weights = {}
    for name, tensor in model.state_dict().items():
        module, _, kind = name.rpartition(".")
        noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float32)
        if module in layer_norms:
            values = (1.0 if kind == "weight" else 0.0) + 0.1 * noise
        elif name in ("class_token", "encoder.pos_embedding"):
            values = 0.5 * noise
        elif tensor.dim() >= 2:  # Linear / conv weights: std 1/sqrt(fan_in)
            fan_in = tensor[0].numel()
            values = noise / fan_in ** 0.5
        else:  # biases
            values = 0.1 * noise
        values = on_float16_grid(values)
        assert (values != 0).all(), f"{name}: a weight rounded to 0; change SEED"
        weights[name] = values
    return weights


def run(make_model, dtype, weights, images, labels):
    """Logits, loss, gradients, per-step losses and weights after SGD_STEPS steps in the given dtype."""
    model = make_model().to(dtype)
    model.load_state_dict({name: value.to(dtype) for name, value in weights.items()})
    model.train()  # dropout is 0.0 everywhere; train() keeps MultiheadAttention off its inference fast path
    x = images.to(dtype)
    optimizer = torch.optim.SGD(model.parameters(), **SGD)
    losses = []
    for step in range(SGD_STEPS):
        optimizer.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        if step == 0:
            first_logits = logits.detach().clone()
            first_loss = loss.detach().clone()
            grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
        losses.append(loss.item())
        optimizer.step()
    after = {name: p.detach().clone() for name, p in model.named_parameters()}
    return dict(logits=first_logits, loss=first_loss, grads=grads, losses=losses, after=after)


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, torch tensor); written in that order, back to back."""
    header = {"__metadata__": metadata}
    chunks = []
    offset = 0
    for name, tensor in tensors:
        dtype_name, code = FORMATS[tensor.dtype]
        values = tensor.detach().contiguous().reshape(-1).tolist()
        data = struct.pack(f"<{len(values)}{code}", *values)
        header[name] = {"dtype": dtype_name, "shape": list(tensor.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        for chunk in chunks:
            f.write(chunk)


def check_file(path, expected_names):
    """Re-reads the header: a cheap guard against a malformed file."""
    raw = pathlib.Path(path).read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    names = [k for k in header if k != "__metadata__"]
    assert names == expected_names, "header names out of order"
    end = max(header[k]["data_offsets"][1] for k in names)
    assert 8 + length + end == len(raw), "data section size does not match the header"


def write_fixture(out, name, model_spec, make_model, image_shape, classes, extra_metadata):
    """One fixture: random weights and inputs, a float64 and a float32 run, the .safetensors and the .json."""
    generator = torch.Generator().manual_seed(SEED)
    weights = random_weights(make_model(), generator)
    images = on_float16_grid(torch.randn(BATCH, *image_shape, generator=generator))
    labels = torch.randint(0, classes, (BATCH,), generator=generator)

    ref = run(make_model, torch.float64, weights, images, labels)
    f32 = run(make_model, torch.float32, weights, images, labels)

    tensors = [(name_, value.to(torch.float16)) for name_, value in weights.items()]
    tensors += [("images", images.to(torch.float16)), ("labels", labels)]
    tensors += [("logits", ref["logits"]), ("loss", ref["loss"].reshape(1)),
                ("sgd.losses", torch.tensor(ref["losses"], dtype=torch.float64))]
    tensors += [(f"grad.{n}", g.to(torch.float32)) for n, g in ref["grads"].items()]
    tensors += [(f"sgd3.{n}", p.to(torch.float32)) for n, p in ref["after"].items()]
    metadata = {"source": "tools/make_fixtures.py", "model": model_spec, "reference_dtype": "float64",
                "torch": torch.__version__, **extra_metadata, "seed": str(SEED),
                "batch": str(BATCH), "sgd_steps": str(SGD_STEPS), **{k: str(v) for k, v in SGD.items()}}
    path = out / f"{name}.safetensors"
    write_safetensors(path, tensors, metadata)
    check_file(path, [n for n, _ in tensors])

    def relative_max_error(a, b):
        return ((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-300)).item()

    float32_vs_float64 = {
        "logits": relative_max_error(f32["logits"], ref["logits"]),
        "loss": relative_max_error(f32["loss"], ref["loss"]),
        **{f"grad.{n}": relative_max_error(f32["grads"][n], g) for n, g in ref["grads"].items()},
        **{f"sgd3.{n}": relative_max_error(f32["after"][n] - weights[n], p - weights[n].double())
           for n, p in ref["after"].items()},
    }
    info = {"file": path.name, "bytes": path.stat().st_size, **metadata, "loss": ref["loss"].item(),
            "sgd_losses": ref["losses"],
            "torch_float32_vs_float64_max_rel_error (sgd3: of the update)": float32_vs_float64}
    (out / f"{name}.json").write_text(json.dumps(info, indent=1) + "\n")
    worst = max(float32_vs_float64.items(), key=lambda kv: kv[1])
    print(f"wrote {path} ({path.stat().st_size} bytes), loss {ref['loss'].item():.6f}, "
          f"sgd losses {ref['losses']}, worst torch float32 error {worst[1]:.2e} ({worst[0]})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/fixtures", help="output folder (created if missing)")
    parser.add_argument("--models", default="vit,mlp",
                        help="comma list of the fixtures to write: vit (needs torchvision), mlp (torch alone)")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - {"vit", "mlp"})
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)} (vit, mlp)")

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    if "vit" in models:
        import torchvision
        write_fixture(out, NAME, "vit_tiny_test", vit_factory(), (3, CONFIG["image_size"], CONFIG["image_size"]),
                      CONFIG["num_classes"], {"torchvision": torchvision.__version__})
    if "mlp" in models:
        c = MLP_CONFIG
        write_fixture(out, MLP_NAME, "mlp_tiny_test", lambda: Mlp(**c), (c["channels"], c["image_size"],
                      c["image_size"]), c["classes"], {})


if __name__ == "__main__":
    main()
