// Mean softmax cross-entropy over a batch of logits, the loss every model family trains with (CPU reference).
// Guarantees: numerically stable (max-shifted, sums in double); labels are all checked before anything is written,
// and one outside [0, classes) is a ddpx::Error naming the index and value; dlogits (when not null) receives
// grad_scale * d(mean loss)/d(logits).
#pragma once
#include <cstdint>

namespace ddpx {

// The targets of a batch beyond plain class indices: label smoothing (--label-smoothing) and a mixed partner
// (mixup/cutmix, data/batch_mixing.hpp). Row b's target distribution is
//   (1 - label_smoothing) * (mix * onehot(labels[b]) + (1 - mix) * onehot(mixed_labels[b])) + label_smoothing / classes
// (mixed_labels nullptr: mix is 1), torch.nn.functional.cross_entropy(label_smoothing=)'s over torchvision's
// mixed one-hot targets.
struct ClassTargets {
  const int32_t* labels = nullptr;
  const int32_t* mixed_labels = nullptr;
  double mix = 1.0;
  double label_smoothing = 0;
};

template <typename T>
T softmax_cross_entropy(const T* logits, const int32_t* labels, int64_t batch, int64_t classes, T* dlogits,
                        T grad_scale = T(1));
// The same loss against soft targets (ClassTargets); with no smoothing and no partner it equals the above.
// Checked against torch.nn.functional.cross_entropy (tests/model/test_soft_targets.cpp).
template <typename T>
T softmax_cross_entropy(const T* logits, const ClassTargets& targets, int64_t batch, int64_t classes, T* dlogits,
                        T grad_scale = T(1));

}  // namespace ddpx
