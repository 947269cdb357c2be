// MlpCpu: the CPU reference MLP classifier, forward and backward, exactly the torch module tools/make_fixtures.py
// builds: x = flatten(image); h_l = GELU_erf(hidden.l(h_{l-1})) for l = 0 .. L-1 (h_{-1} = x); logits = head(h).
// Guarantees:
//  - Parameters and gradients are flat buffers in MlpLayout's (backward) order, owned by the caller; the object
//    owns a copy of the layout and the activation storage, sized for max_batch at construction (forward() with a
//    larger batch is a ddpx::Error; nothing reallocates after construction).
//  - backward() ADDS (+=) into every parameter gradient, never writes padding, and reports each layer's span as
//    soon as its gradients are final and its weights are no longer read: the head, then hidden L-1 .. 0, the
//    layout's ready_spans() in order.
//  - Reductions (bias gradients) accumulate in double for both T (model/cpu_layers.hpp). Not thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "model/cross_entropy.hpp"
#include "model/mlp/mlp_layout.hpp"

namespace ddpx {

template <typename T>
class MlpCpu {
 public:
  MlpCpu(const MlpLayout& layout, int64_t max_batch);
  static double activation_bytes(const MlpConfig& config, int64_t max_batch);

  // images: [batch, C, H, W] row-major (read as [batch, C*H*W]); logits: [batch, classes].
  void forward(const T* params, const T* images, int64_t batch, T* logits);
  // Backward of the last forward; grads += d(loss)/d(params); on_ready(begin, end) per ready span.
  void backward(const T* params, const T* dlogits, T* grads,
                const std::function<void(size_t begin, size_t end)>& on_ready = {});

  const MlpLayout& layout() const { return layout_; }
  int64_t max_batch() const { return max_batch_; }

 private:
  MlpLayout layout_;
  int64_t max_batch_;
  int64_t batch_ = 0;              // of the last forward; 0 before the first
  std::vector<T> input_;           // [batch, in]  the flattened images
  std::vector<std::vector<T>> pre_, post_;  // per hidden layer [batch, width]: before and after GELU
  std::vector<T> d_post_, d_pre_;  // backward scratch [batch, width]
};

}  // namespace ddpx
