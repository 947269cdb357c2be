// Mean softmax cross-entropy over a batch of logits, the loss every model family trains with (CPU reference).
// Guarantees: numerically stable (max-shifted, sums in double); labels are all checked before anything is written,
// and one outside [0, classes) is a ddpx::Error naming the index and value; dlogits (when not null) receives
// grad_scale * d(mean loss)/d(logits).
#pragma once
#include <cstdint>

namespace ddpx {

template <typename T>
T softmax_cross_entropy(const T* logits, const int32_t* labels, int64_t batch, int64_t classes, T* dlogits,
                        T grad_scale = T(1));

}  // namespace ddpx
