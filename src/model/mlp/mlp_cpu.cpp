// CPU reference MLP forward/backward (see mlp_cpu.hpp for the guarantees).
// A Linear layer computes Y = X W^T + b with torch's W [out, in] (model/cpu_layers.hpp).
#include "model/mlp/mlp_cpu.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "model/cpu_layers.hpp"

namespace ddpx {

template <typename T>
MlpCpu<T>::MlpCpu(const MlpLayout& layout, int64_t max_batch) : layout_(layout), max_batch_(max_batch) {
  DDPX_REQUIRE(max_batch > 0, "the CPU MLP needs a positive maximum batch, got {}", max_batch);
  const MlpConfig& c = layout_.config();
  const auto B = static_cast<size_t>(max_batch), W = static_cast<size_t>(c.width);
  input_.resize(B * static_cast<size_t>(c.in_features()));
  pre_.assign(static_cast<size_t>(c.num_layers), std::vector<T>(B * W));
  post_.assign(static_cast<size_t>(c.num_layers), std::vector<T>(B * W));
  d_post_.resize(B * W);
  d_pre_.resize(B * W);
}

template <typename T>
double MlpCpu<T>::activation_bytes(const MlpConfig& c, int64_t max_batch) {
  const double B = static_cast<double>(max_batch), W = static_cast<double>(c.width);
  return B * (static_cast<double>(c.in_features()) + (2.0 * static_cast<double>(c.num_layers) + 2) * W) *
         static_cast<double>(sizeof(T));
}

template <typename T>
void MlpCpu<T>::forward(const T* params, const T* images, int64_t batch, T* logits) {
  DDPX_REQUIRE(batch > 0 && batch <= max_batch_,
               "batch {} is outside [1, {}], the maximum batch this CPU model ({}) was built for", batch, max_batch_,
               layout_.spec());
  batch_ = batch;
  const MlpConfig& c = layout_.config();
  std::copy(images, images + batch * c.in_features(), input_.begin());
  const T* x = input_.data();
  for (size_t l = 0; l < layout_.hidden.size(); ++l) {
    const LinearOffsets& o = layout_.hidden[l];
    cpu_layers::linear_forward(x, batch, o.in, params + o.weight, params + o.bias, o.out, pre_[l].data());
    for (int64_t i = 0; i < batch * o.out; ++i) post_[l][i] = cpu_layers::gelu(pre_[l][i]);
    x = post_[l].data();
  }
  const LinearOffsets& h = layout_.head;
  cpu_layers::linear_forward(x, batch, h.in, params + h.weight, params + h.bias, h.out, logits);
}

template <typename T>
void MlpCpu<T>::backward(const T* params, const T* dlogits, T* grads,
                         const std::function<void(size_t, size_t)>& on_ready) {
  DDPX_REQUIRE(batch_ > 0, "MlpCpu::backward without a forward pass");
  const std::vector<BufferSpan>& spans = layout_.ready_spans();
  auto ready = [&](size_t span) {
    if (on_ready) on_ready(spans[span].begin, spans[span].end);
  };
  const auto L = layout_.hidden.size();
  const LinearOffsets& h = layout_.head;
  cpu_layers::linear_backward(post_[L - 1].data(), batch_, h.in, params + h.weight, dlogits, h.out,
                              grads + h.weight, grads + h.bias, d_post_.data());
  ready(0);
  for (size_t l = L; l-- > 0;) {
    const LinearOffsets& o = layout_.hidden[l];
    for (int64_t i = 0; i < batch_ * o.out; ++i) d_pre_[i] = d_post_[i] * cpu_layers::gelu_derivative(pre_[l][i]);
    const T* x = l == 0 ? input_.data() : post_[l - 1].data();
    cpu_layers::linear_backward(x, batch_, o.in, params + o.weight, d_pre_.data(), o.out, grads + o.weight,
                                grads + o.bias, l == 0 ? nullptr : d_post_.data());
    ready(L - l);
  }
}

template class MlpCpu<float>;
template class MlpCpu<double>;

}  // namespace ddpx
