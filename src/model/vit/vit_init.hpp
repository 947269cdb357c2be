// ViT parameter initialization into a flat VitLayout buffer.
// Guarantees:
//  - init_vit_params follows torchvision's VisionTransformer scheme tensor by tensor (see vit_init.cpp for the
//    rule of each tensor); padding between tensors is set to 0.
//  - Each tensor draws from its own ddpx::Rng stream seeded from (seed, tensor name): the same seed gives the same
//    values on every platform, and a tensor's values do not depend on which other tensors the layout holds.
//  - A tensor the rules do not know raises ddpx::Error naming it (a new layout tensor needs a new rule).
#pragma once
#include <cstdint>

#include "model/vit/vit_layout.hpp"

namespace ddpx {

// torchvision's initialization (fills the whole buffer of layout.buffer_size() elements).
void init_vit_params(const VitLayout& layout, float* params, uint64_t seed);

// For tests: every tensor, heads.head included, gets non-zero random values: N(0, scale^2), and LayerNorm weights
// 1 + N(0, scale^2) so the model stays well conditioned. Padding is set to 0.
void init_vit_params_random(const VitLayout& layout, float* params, uint64_t seed, float scale);

}  // namespace ddpx
