// MLP parameter initialization into a flat MlpLayout buffer: torch.nn.Linear's default, tensor by tensor.
// Guarantees:
//  - weight [out, in] and bias [out] both U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform with a = sqrt(5), and the
//    bias rule of nn.Linear.reset_parameters); padding is set to 0.
//  - Each tensor draws from its own ddpx::Rng stream seeded from (seed, tensor name), as the ViT's do: the same
//    seed gives the same values on every platform.
#pragma once
#include <cstdint>

#include "model/mlp/mlp_layout.hpp"

namespace ddpx {

void init_mlp_params(const MlpLayout& layout, float* params, uint64_t seed);

}  // namespace ddpx
