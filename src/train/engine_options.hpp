// EngineOptions: what a step engine is told, the part of a run it uses (TrainOptions' engine_options() fills it
// for `ddpx train`; `ddpx eval` fills it itself). Below TrainOptions: the engines never see the whole options bag.
#pragma once
#include <cstdint>

#include "core/device.hpp"
#include "data/data_spec.hpp"
#include "data/dataset.hpp"
#include "model/precision.hpp"
#include "optim/optimizer_spec.hpp"
#include "train/recipe_options.hpp"

namespace ddpx {

struct EngineOptions {
  Device device = Device::cpu;
  Precision precision = Precision::fp32;  // tf32/bf16: Device::cuda only
  int64_t batch = 32;                     // the largest micro-batch (eval: images per forward pass)
  OptimizerSpec optimizer;
  DataSource data = DataSource::synthetic;  // synthetic_device: the CUDA engine generates the batches
  uint64_t seed = 0;                        // for DataSource::synthetic_device
  // CUDA, image sources (--normalize device): batches arrive as uint8 (HostBatch::pixels), are copied as such
  // and normalized on the device (kernels/normalize_pixels.hpp) with these values.
  bool device_normalization = false;
  PixelNormalization normalization;
  int cpu_threads = 0;                      // Device::cpu: BLAS threads (0: the node's cores / its ranks)
  double divergence_ratio = 1e4;            // train/numerics_guard.hpp
  // CUDA bf16: the weight-gradient GEMMs write bf16 (Note [bf16 weight gradients in their fp32 slots],
  // model_cuda/cuda_model.hpp); then grad_buffer() holds that mixed form, so no reducer that reads its buckets may
  // be attached (comm_plan/hook_catalogue.hpp: comm_hook_reads_bucket).
  bool bf16_weight_grads = false;
  RecipeOptions recipe;  // regularization beyond the optimizer (train/recipe_options.hpp)
  // Throws ddpx::Error naming the flag: --precision against --device, --batch, --cpu-threads, the optimizer, the recipe.
  void validate() const;
};

}  // namespace ddpx
