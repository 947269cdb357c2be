// make_fuzz_corpus OUT_DIR: writes the valid seed files of the binary-format fuzz targets with the project's own
// writers, one folder per target (OUT_DIR/<target>/<name>): safetensors of every dtype, .npy of every dtype and
// rank, parameter files and SGD/AdamW checkpoints of the fuzz model (fuzz_support.hpp), tuned configs in both forms.
// The JSON seeds (reports, traces, peak tables, topologies, NCCL logs, train configs) come from real runs and
// tests/fixtures/recorded instead; see README.md. Guarantee: the output is deterministic (fixed seeds, no times).
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "fuzz_support.hpp"
#include "io/checkpoint.hpp"
#include "io/npy.hpp"
#include "io/param_safetensors.hpp"
#include "io/safetensors.hpp"
#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_config.hpp"
#include "optim/optimizer.hpp"
#include "tune/tuner.hpp"

namespace fs = std::filesystem;
using namespace ddpx;

namespace {

HostTensor counting(TensorDType dtype, std::vector<int64_t> shape) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<std::byte>((i * 37 + 11) & 0xff);
  return t;
}

void write_tensor_files(const fs::path& out) {
  fs::create_directories(out / "safetensors");
  SafetensorsContents mixed;
  mixed.metadata = {{"format", "pt"}, {"note", "every dtype"}};
  const std::vector<std::pair<TensorDType, std::vector<int64_t>>> kinds = {
      {TensorDType::f32, {2, 3}}, {TensorDType::f64, {3}}, {TensorDType::f16, {2, 2}}, {TensorDType::bf16, {4}},
      {TensorDType::i32, {1, 1, 2}}, {TensorDType::i64, {2}}, {TensorDType::u8, {5}}, {TensorDType::f32, {}},
      {TensorDType::f32, {0, 4}}};
  for (size_t i = 0; i < kinds.size(); ++i)
    mixed.tensors.push_back({fmt::format("t{}.{}", i, dtype_name(kinds[i].first)),
                             counting(kinds[i].first, kinds[i].second)});
  write_safetensors(out / "safetensors" / "every_dtype.safetensors", mixed);
  write_safetensors(out / "safetensors" / "empty.safetensors", SafetensorsContents{});

  fs::create_directories(out / "npy");
  write_npy(out / "npy" / "images_f32.npy", counting(TensorDType::f32, {2, 3, 2, 2}));
  write_npy(out / "npy" / "labels_i64.npy", counting(TensorDType::i64, {4}));
  write_npy(out / "npy" / "labels_i32.npy", counting(TensorDType::i32, {3}));
  write_npy(out / "npy" / "bytes_u8.npy", counting(TensorDType::u8, {7}));
  write_npy(out / "npy" / "half_f16.npy", counting(TensorDType::f16, {2, 1}));
  write_npy(out / "npy" / "scalar_f64.npy", counting(TensorDType::f64, {}));
  write_npy(out / "npy" / "empty_f32.npy", counting(TensorDType::f32, {0, 3}));
}

void write_model_files(const fs::path& out) {
  const VitLayout layout(parse_vit_spec(fuzz::kModelSpec));
  std::vector<float> params(layout.buffer_size(), 0.f);
  Rng rng(7);
  for (const TensorSlot& slot : layout.tensors())
    for (size_t i = 0; i < slot.numel; ++i) params[slot.offset + i] = static_cast<float>(0.1 * rng.normal());
  fs::create_directories(out / "param_safetensors");
  save_params_safetensors(out / "param_safetensors" / "params.safetensors", layout, params.data());
  fs::create_directories(out / "safetensors");
  save_params_safetensors(out / "safetensors" / "params.safetensors", layout, params.data());

  std::vector<float> grads(layout.buffer_size(), 0.f);
  for (const TensorSlot& slot : layout.tensors())
    for (size_t i = 0; i < slot.numel; ++i) grads[slot.offset + i] = static_cast<float>(0.01 * rng.normal());
  for (const char* name : {"sgd", "adamw"}) {
    OptimizerSpec spec;
    spec.kind = parse_optimizer_kind(name);
    if (spec.kind == OptimizerKind::sgd) spec.momentum = 0.9f;
    const auto optimizer = std::make_unique<Optimizer>(spec, layout.buffer_size());
    std::vector<float> trained = params;
    for (int step = 0; step < 2; ++step) optimizer->step(trained.data(), grads.data(), trained.size());
    CheckpointState state;
    state.step = 2;
    state.extra = {{"seed", 0}, {"data", "synthetic"}, {"batch", 4}, {"grad_accum", 1}};
    const fs::path dir = out / "checkpoint_dirs" / name;
    save_checkpoint(dir, layout, trained.data(), *optimizer, state);
    fs::create_directories(out / "checkpoint");
    fs::copy_file(checkpoint_file(dir), out / "checkpoint" / fmt::format("{}.safetensors", name),
                  fs::copy_options::overwrite_existing);
  }
  fs::remove_all(out / "checkpoint_dirs");
}

// The config targets take a first byte that picks the form (even: .cfg, odd: .json) before the file's bytes.
void write_with_form_byte(const fs::path& source, const fs::path& target, bool json) {
  std::ifstream in(source, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::ofstream out(target, std::ios::binary);
  out << (json ? '\x01' : '\x00') << bytes.str();
}

void write_tuned_configs(const fs::path& out) {
  fs::create_directories(out / "tuned_config");
  TrialConfig config;
  config.bucket_mb = 50;
  config.first_bucket_mb = 2;
  config.comm_hook = "bf16";
  for (const bool json : {false, true}) {
    const fs::path plain = out / (json ? "tuned.json" : "tuned.cfg");
    write_trial_config(config, plain.string());
    write_with_form_byte(plain, out / "tuned_config" / (json ? "best_json" : "best_cfg"), json);
    fs::remove(plain);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: make_fuzz_corpus OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  try {
    write_tensor_files(out);
    write_model_files(out);
    write_tuned_configs(out);
  } catch (const std::exception& e) {
    fmt::print(stderr, "make_fuzz_corpus: {}\n", e.what());
    return 1;
  }
  return 0;
}
