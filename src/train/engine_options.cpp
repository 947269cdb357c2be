// EngineOptions' checks; see engine_options.hpp.
#include "train/engine_options.hpp"

#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx {

void EngineOptions::validate() const {
  DDPX_REQUIRE(device == Device::cuda || precision == Precision::fp32,
               "--precision {} needs --device cuda (the CPU engine computes in fp32)", precision_name(precision));
  DDPX_REQUIRE(batch > 0, "--batch must be a positive number of images per rank, got {}", batch);
  DDPX_REQUIRE(cpu_threads >= 0 && cpu_threads <= 4096,
               "--cpu-threads must be 0 (the node's cores shared by its ranks) or a thread count, got {}", cpu_threads);
  DDPX_REQUIRE(cpu_threads == 0 || device == Device::cpu, "--cpu-threads {} applies to --device cpu only",
               cpu_threads);
  DDPX_INTERNAL_ASSERT(!bf16_weight_grads || (device == Device::cuda && precision == Precision::bf16),
                       "bf16 weight gradients asked of a {} engine in {}", device == Device::cuda ? "CUDA" : "CPU",
                       precision_name(precision));
  optimizer.validate();
  recipe.validate();
}

}  // namespace ddpx
