// Fuzz target: training checkpoints (read_checkpoint_info and load_checkpoint: `ddpx train --resume DIR`), i.e.
// the safetensors file plus its metadata (version, model, optimizer name, options and state names, step counts,
// RNG states, data position, extra).
// The reader must guarantee, for any bytes: no crash, no hang, memory bounded by the file and the model, and every
// refusal a ddpx::Error naming the checkpoint and the metadata key or tensor. The optimizer is the one the
// checkpoint names when ddpx knows it (so the tensors are reached), over the fixed tiny model of fuzz_support.hpp.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "fuzz_support.hpp"
#include "io/checkpoint.hpp"
#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_config.hpp"
#include "optim/optimizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ddpx::VitLayout layout(ddpx::parse_vit_spec(ddpx::fuzz::kModelSpec));
  const std::filesystem::path dir = ddpx::fuzz::scratch_dir() / "checkpoint";
  std::filesystem::create_directories(dir);
  ddpx::fuzz::write_scratch_file("checkpoint/checkpoint.safetensors", data, size);
  ddpx::fuzz::expect_clean_refusal([&] {
    const ddpx::CheckpointInfo info = ddpx::read_checkpoint_info(dir);
    const bool adamw = info.optimizer == "adamw";
    ddpx::OptimizerSpec spec;
    spec.kind = adamw ? ddpx::OptimizerKind::adamw : ddpx::OptimizerKind::sgd;
    if (!adamw) spec.momentum = 0.9f;  // sgd keeps a momentum buffer, as in a checkpoint of `--momentum 0.9`
    const auto optimizer = std::make_unique<ddpx::Optimizer>(spec, layout.buffer_size());
    std::vector<float> params(layout.buffer_size());
    ddpx::load_checkpoint(dir, layout, params.data(), *optimizer);
  });
  return 0;
}
