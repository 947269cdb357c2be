// Layout-aware parameter files: torchvision names, bit-exact round trip, dtype conversion on load, and the
// mismatch errors (missing / extra tensor, wrong shape, wrong dtype) that name the file, tensor, shapes and --model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/half_precision.hpp"
#include "core/rng.hpp"
#include "io/io_test_support.hpp"
#include "io/param_safetensors.hpp"
#include "model/vit/vit_layout.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
using testing::TempDir;

// Random values in every slot, zeros in the padding (the layout's invariant).
std::vector<float> random_params(const VitLayout& layout, uint64_t seed) {
  std::vector<float> params(layout.buffer_size(), 0.f);
  Rng rng(seed);
  for (const TensorSlot& slot : layout.tensors())
    for (size_t i = 0; i < slot.numel; ++i) params[slot.offset + i] = static_cast<float>(rng.normal());
  return params;
}

TEST(ParamSafetensors, RoundTripIsBitExactUnderTorchvisionNames) {
  TempDir dir;
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  const std::vector<float> params = random_params(layout, 1);
  save_params_safetensors(dir / "w.safetensors", layout, params.data(), {{"epoch", "3"}});
  EXPECT_FALSE(std::filesystem::exists(dir / ".w.safetensors.tmp"));

  const SafetensorsReader reader(dir / "w.safetensors");
  EXPECT_EQ(reader.metadata().at("model"), "vit_tiny_test");
  EXPECT_EQ(reader.metadata().at("format"), "pt");
  EXPECT_EQ(reader.metadata().at("epoch"), "3");
  EXPECT_EQ(reader.entries().size(), layout.tensors().size());
  EXPECT_EQ(reader.at("encoder.layers.encoder_layer_1.self_attention.in_proj_weight").shape,
            (std::vector<int64_t>{96, 32}));
  EXPECT_EQ(reader.at("conv_proj.weight").shape, (std::vector<int64_t>{32, 3, 4, 4}));
  EXPECT_EQ(reader.entries().front().name, "heads.head.weight");  // written in layout (backward) order

  std::vector<float> loaded(layout.buffer_size(), 123.f);  // garbage in the padding must be cleared
  load_params_safetensors(dir / "w.safetensors", layout, loaded.data());
  EXPECT_EQ(std::memcmp(loaded.data(), params.data(), params.size() * sizeof(float)), 0);
}

TEST(ParamSafetensors, LoadsBf16F16AndF64ByConverting) {
  TempDir dir;
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  const std::vector<float> params = random_params(layout, 2);
  // Store heads.head.weight as BF16, heads.head.bias as F16, encoder.ln.weight as F64, the rest as F32.
  std::vector<TensorView> views = layout_tensor_views(layout, "", params.data());
  const TensorSlot& head = layout.at("heads.head.weight");
  const TensorSlot& bias = layout.at("heads.head.bias");
  const TensorSlot& ln = layout.at("encoder.ln.weight");
  std::vector<uint16_t> head_bf16(head.numel), bias_f16(bias.numel);
  std::vector<double> ln_f64(ln.numel);
  for (size_t i = 0; i < head.numel; ++i) head_bf16[i] = float_to_bf16(params[head.offset + i]);
  for (size_t i = 0; i < bias.numel; ++i) bias_f16[i] = float_to_half(params[bias.offset + i]);
  for (size_t i = 0; i < ln.numel; ++i) ln_f64[i] = params[ln.offset + i];
  for (TensorView& view : views) {
    if (view.name == head.name) view = {view.name, TensorDType::bf16, view.shape, head_bf16.data()};
    if (view.name == bias.name) view = {view.name, TensorDType::f16, view.shape, bias_f16.data()};
    if (view.name == ln.name) view = {view.name, TensorDType::f64, view.shape, ln_f64.data()};
  }
  write_safetensors(dir / "mixed.safetensors", views);

  std::vector<float> loaded(layout.buffer_size());
  load_params_safetensors(dir / "mixed.safetensors", layout, loaded.data());
  EXPECT_EQ(loaded[head.offset + 5], bf16_to_float(head_bf16[5]));
  EXPECT_NEAR(loaded[head.offset + 5], params[head.offset + 5], std::abs(params[head.offset + 5]) * 0x1p-8);
  EXPECT_EQ(loaded[bias.offset + 3], half_to_float(bias_f16[3]));
  EXPECT_EQ(loaded[ln.offset + 7], params[ln.offset + 7]);  // f32 -> f64 -> f32 is exact
  const TensorSlot& conv = layout.at("conv_proj.bias");
  EXPECT_EQ(loaded[conv.offset], params[conv.offset]);
}

TEST(ParamSafetensors, MismatchesNameFileTensorShapesAndModel) {
  TempDir dir;
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  const std::vector<float> params = random_params(layout, 3);
  std::vector<float> target(layout.buffer_size(), 7.f);

  // A model with 5 classes: head shapes differ.
  const VitLayout other(parse_vit_spec("vit_tiny_test:classes=5"));
  const std::vector<float> other_params = random_params(other, 4);
  save_params_safetensors(dir / "other.safetensors", other, other_params.data());
  expect_error([&] { load_params_safetensors(dir / "other.safetensors", layout, target.data()); },
               {"other.safetensors", "'heads.head.weight'", "[5, 32]", "[10, 32]", "--model vit_tiny_test",
                "saved for --model custom:", "classes=5", "Pass the --model"});
  EXPECT_EQ(target[0], 7.f) << "a refused file must not touch the buffer";

  // A missing tensor and an extra one.
  std::vector<TensorView> views = layout_tensor_views(layout, "", params.data());
  views.erase(std::find_if(views.begin(), views.end(), [](const TensorView& v) { return v.name == "class_token"; }));
  const float stray[2] = {1.f, 2.f};
  views.push_back({"heads.pre_logits.weight", TensorDType::f32, {2}, stray});
  write_safetensors(dir / "edited.safetensors", views);
  expect_error([&] { load_params_safetensors(dir / "edited.safetensors", layout, target.data()); },
               {"edited.safetensors", "missing tensor 'class_token'", "[1, 1, 32]",
                "unexpected tensor 'heads.pre_logits.weight' [2]", "--model vit_tiny_test"});

  // An integer tensor where a parameter belongs.
  views = layout_tensor_views(layout, "", params.data());
  std::vector<int32_t> ints(layout.at("encoder.ln.bias").numel, 1);
  for (TensorView& view : views)
    if (view.name == "encoder.ln.bias") view = {view.name, TensorDType::i32, view.shape, ints.data()};
  write_safetensors(dir / "ints.safetensors", views);
  expect_error([&] { load_params_safetensors(dir / "ints.safetensors", layout, target.data()); },
               {"ints.safetensors", "'encoder.ln.bias' is I32", "F32, F64, F16 or BF16"});

  // Many problems: the list is capped and counted.
  const VitLayout deeper(parse_vit_spec("vit_tiny_test:layers=4"));
  const std::vector<float> deeper_params = random_params(deeper, 5);
  save_params_safetensors(dir / "deeper.safetensors", deeper, deeper_params.data());
  expect_error([&] { load_params_safetensors(dir / "deeper.safetensors", layout, target.data()); },
               {"deeper.safetensors", "unexpected tensor 'encoder.layers.encoder_layer_3.mlp.3.weight'",
                "... and 16 more"});
}

// --save files carry a CRC-32 per tensor (torchvision ignores the metadata); a flipped bit is refused naming the
// tensor, a file without checksums (saved by PyTorch) still loads, and non-finite weights are never written.
TEST(ParamSafetensors, ChecksumsCatchAFlippedBitAndNonFiniteWeightsAreNotWritten) {
  TempDir dir;
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  std::vector<float> params = random_params(layout, 3);
  save_params_safetensors(dir / "w.safetensors", layout, params.data(), {}, "--save");
  const std::string bytes = testing::read_bytes(dir / "w.safetensors");
  const SafetensorsReader reader(dir / "w.safetensors");
  EXPECT_NE(reader.metadata().find("ddpx.crc32"), reader.metadata().end());
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  const SafetensorsEntry& entry = reader.at("encoder.layers.encoder_layer_0.mlp.3.bias");
  std::string damaged = bytes;
  damaged[8 + header + entry.data_begin + 1] ^= 0x01;
  testing::write_bytes(dir / "damaged.safetensors", damaged);
  std::vector<float> loaded(layout.buffer_size());
  expect_error([&] { load_params_safetensors(dir / "damaged.safetensors", layout, loaded.data()); },
               {"damaged.safetensors", "encoder.layers.encoder_layer_0.mlp.3.bias", "checksum"});
  // Without the key (as PyTorch writes it): loads as before.
  write_safetensors(dir / "plain.safetensors", layout_tensor_views(layout, "", params.data()));
  load_params_safetensors(dir / "plain.safetensors", layout, loaded.data());
  EXPECT_EQ(std::memcmp(loaded.data(), params.data(), params.size() * sizeof(float)), 0);

  params[layout.at("conv_proj.bias").offset] = -std::numeric_limits<float>::infinity();
  expect_error([&] { save_params_safetensors(dir / "w.safetensors", layout, params.data(), {}, "--save"); },
               {"--save", "conv_proj.bias", "-inf"});
  EXPECT_EQ(testing::read_bytes(dir / "w.safetensors"), bytes) << "the good file must stay";
}

// Issue 37 item 3, for --load: the header (metadata and the tensor table) is checksummed too, so a flipped bit in
// "ddpx.step" or in a tensor's shape is refused, naming the file.
TEST(ParamSafetensors, AFlippedBitInTheHeaderIsRefused) {
  TempDir dir;
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  std::vector<float> params = random_params(layout, 4);
  save_params_safetensors(dir / "w.safetensors", layout, params.data(), {{"ddpx.step", "40"}}, "--save");
  const std::string bytes = testing::read_bytes(dir / "w.safetensors");
  std::vector<float> loaded(layout.buffer_size());
  for (const std::string& near : {std::string("\"ddpx.step\":\"4"), std::string("\"model\":\"v")}) {
    std::string damaged = bytes;
    const size_t at = damaged.find(near);
    ASSERT_NE(at, std::string::npos) << near;
    damaged[at + near.size() - 1] ^= 0x01;
    testing::write_bytes(dir / "damaged.safetensors", damaged);
    expect_error([&] { load_params_safetensors(dir / "damaged.safetensors", layout, loaded.data()); },
                 {"damaged.safetensors", "header", "checksum"});
  }
  load_params_safetensors(dir / "w.safetensors", layout, loaded.data());
  EXPECT_EQ(std::memcmp(loaded.data(), params.data(), params.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace ddpx
