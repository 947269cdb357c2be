// torch.nn.Linear's default initialization for the MLP (see mlp_init.hpp for the guarantees).
#include "model/mlp/mlp_init.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include "core/fnv1a.hpp"
#include "core/rng.hpp"

namespace ddpx {

void init_mlp_params(const MlpLayout& layout, float* params, uint64_t seed) {
  std::fill(params, params + layout.buffer_size(), 0.f);
  for (const TensorSlot& slot : layout.tensors()) {
    // "hidden.3.bias" -> its layer's weight "hidden.3.weight", whose shape is [out, in].
    const std::string layer = slot.name.substr(0, slot.name.rfind('.'));
    const double fan_in = static_cast<double>(layout.at(layer + ".weight").shape.at(1));
    const double bound = 1.0 / std::sqrt(fan_in);
    Rng rng(seed ^ fnv1a(slot.name));
    for (size_t i = 0; i < slot.numel; ++i) params[slot.offset + i] = static_cast<float>(rng.uniform(-bound, bound));
  }
}

}  // namespace ddpx
