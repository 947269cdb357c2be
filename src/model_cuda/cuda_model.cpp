// The CUDA models' shared parameter store and fused optimizer update (see cuda_model.hpp for the guarantees).
// Moved here unchanged from the CUDA ViT, which held it when it was the only CUDA model.
#include "model_cuda/cuda_model.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "kernels/optimizer.hpp"
#include "optim/adamw.hpp"
#include "optim/sgd.hpp"

namespace ddpx {

MatmulMode matmul_mode(Precision precision) {
  switch (precision) {
    case Precision::fp32: return MatmulMode::fp32;
    case Precision::tf32: return MatmulMode::tf32;
    case Precision::bf16: return MatmulMode::bf16;
  }
  return MatmulMode::fp32;
}

CudaModel::CudaModel(const FlatLayout& layout, int64_t max_batch, Precision precision, cudaStream_t compute_stream)
    : flat_(layout), max_batch_(max_batch), precision_(precision), stream_(compute_stream) {
  DDPX_REQUIRE(max_batch > 0, "the CUDA model needs a positive maximum batch, got {}", max_batch);
  const size_t n = flat_.buffer_size();
  const std::string model = flat_.spec();
  params_ = DeviceBuffer<float>(n, "the parameters of " + model);
  grads_ = DeviceBuffer<float>(n, "the gradients of " + model);
  DDPX_CUDA_CHECK(cudaMemsetAsync(params_.get(), 0, params_.bytes(), stream_));
  DDPX_CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), stream_));
  if (precision_ == Precision::bf16) {
    low_precision_weights_ = DeviceBuffer<__nv_bfloat16>(n, "the bf16 weight copy of " + model);
    DDPX_CUDA_CHECK(cudaMemsetAsync(low_precision_weights_.get(), 0, low_precision_weights_.bytes(), stream_));
  }
  // The zero fills must land before the caller uploads parameters with a (legacy-stream) cudaMemcpy.
  DDPX_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

CudaModel::~CudaModel() = default;

void CudaModel::zero_grads() {
  grads_are_zero_ = true;  // the next forward_backward writes every gradient (cuda_model.hpp); no pass over grads
}

void CudaModel::sync_low_precision_weights() {
  if (precision_ == Precision::bf16)
    cast_to_bf16(params_.get(), low_precision_weights_.get(), static_cast<int64_t>(params_.size()), stream_);
}

void CudaModel::forward(const float* d_images, int64_t batch, float* d_logits) {
  run_forward(d_images, batch, d_logits);
}

void CudaModel::use_bf16_weight_gradients() {
  DDPX_INTERNAL_ASSERT(precision_ == Precision::bf16, "bf16 weight gradients asked of a {} model",
                       precision_name(precision_));
  DDPX_INTERNAL_ASSERT(bf16_regions_host_.empty(), "bf16 weight gradients switched on twice");
  std::vector<BufferSpan> slots = weight_gradient_slots();
  std::sort(slots.begin(), slots.end(), [](const BufferSpan& a, const BufferSpan& b) { return a.begin < b.begin; });
  for (const BufferSpan& slot : slots) {
    DDPX_INTERNAL_ASSERT(slot.begin % 4 == 0 && slot.end % 4 == 0 && slot.begin < slot.end &&
                             (bf16_regions_host_.empty() ||
                              static_cast<long long>(slot.begin) >=
                                  bf16_regions_host_.back().offset + bf16_regions_host_.back().numel) &&
                             slot.end <= params_.size(),
                         "weight-gradient slot [{}, {}) is not a 4-aligned tensor past the one before it",
                         slot.begin, slot.end);
    bf16_regions_host_.push_back({static_cast<long long>(slot.begin), static_cast<long long>(slot.end - slot.begin)});
  }
  if (bf16_regions_host_.empty()) return;
  bf16_regions_ = DeviceBuffer<PackedBf16Region>(bf16_regions_host_.size(), "the bf16 weight-gradient regions");
  DDPX_CUDA_CHECK(cudaMemcpyAsync(bf16_regions_.get(), bf16_regions_host_.data(), bf16_regions_.bytes(),
                                  cudaMemcpyHostToDevice, stream_));
  DDPX_CUDA_CHECK(cudaStreamSynchronize(stream_));  // landed before any stream (the update stream too) reads it
}

void CudaModel::forward_backward(const float* d_images, const int32_t* d_labels, int64_t batch, float grad_scale,
                                 float* d_loss, const std::function<void(size_t, size_t)>& on_ready) {
  // Note [bf16 weight gradients in their fp32 slots]: bf16 slots are written, never added into.
  DDPX_INTERNAL_ASSERT(!bf16_weight_gradients() || grads_are_zero_,
                       "a forward_backward would add into bf16 weight gradients (accumulation needs fp32 ones)");
  run_forward_backward(d_images, d_labels, batch, grad_scale, d_loss,
                       GradWrite{.overwrite = grads_are_zero_, .bf16_weights = bf16_weight_gradients(), .targets = targets_}, on_ready);
  grads_are_zero_ = false;
}

float* CudaModel::lazily_allocated(DeviceBuffer<float>& buffer, const char* what) {
  if (!buffer.get()) {
    buffer = DeviceBuffer<float>(params_.size(), std::string(what) + " of " + flat_.spec());
    DDPX_CUDA_CHECK(cudaMemsetAsync(buffer.get(), 0, buffer.bytes(), stream_));
  }
  return buffer.get();
}

float* CudaModel::optimizer_state(std::string_view name) {
  if (name == "momentum") return lazily_allocated(momentum_, "the SGD momentum buffer");
  if (name == "exp_avg") return lazily_allocated(exp_avg_, "the AdamW exp_avg buffer");
  if (name == "exp_avg_sq") return lazily_allocated(exp_avg_sq_, "the AdamW exp_avg_sq buffer");
  DDPX_INTERNAL_FAIL("the CUDA optimizers have no state buffer '{}' (momentum, exp_avg, exp_avg_sq)", name);
}

void CudaModel::optimizer_step(const OptimizerSpec& spec, int64_t step, unsigned long long* nonfinite_gradient) {
  optimizer_span(spec, step, 0, params_.size(), stream_, nonfinite_gradient);
}

namespace {
void require_span(const char* what, int64_t step, size_t begin, size_t end, size_t size) {
  DDPX_INTERNAL_ASSERT(step >= 1, "{}: step must start at 1, got {}", what, step);
  DDPX_INTERNAL_ASSERT(begin <= end && end <= size && begin % 4 == 0 && end % 4 == 0,
                       "{}: span [{}, {}) is not a 4-aligned part of the {}-element buffer", what, begin, end, size);
}
}  // namespace

// The kernels' argument structs (the device ABI, kernels/optimizer.hpp) are filled here, from the spec's
// per-step scalars: the same values the CPU update uses.
void CudaModel::optimizer_span(const OptimizerSpec& spec, int64_t step, size_t begin, size_t end, cudaStream_t stream,
                               unsigned long long* nonfinite_gradient, const ReducedGradients* reduced) {
  require_span("optimizer_span", step, begin, end, params_.size());
  if (begin == end) return;
  __nv_bfloat16* low = low_precision_weights_.get();
  const auto n = static_cast<int64_t>(end - begin);
  // Note [bf16 weight gradients in their fp32 slots]: the optimizer widens the bf16 regions in its pass.
  ReducedGradients packed;
  if (bf16_weight_gradients()) {
    DDPX_INTERNAL_ASSERT(reduced == nullptr || reduced->in_buffer(),
                         "span [{}, {}): a hook's reduced gradients over bf16 weight gradients", begin, end);
    packed.packed_bf16 = {bf16_regions_.get(), static_cast<int>(bf16_regions_host_.size()),
                          static_cast<long long>(begin)};
    reduced = &packed;
  }
  switch (spec.kind) {
    case OptimizerKind::sgd: {
      const SgdStepScalars s = sgd_step_scalars(spec, step);
      SgdUpdate update;
      update.lr = s.lr, update.momentum = s.momentum, update.dampening = s.dampening;
      update.weight_decay = s.weight_decay, update.nesterov = s.nesterov, update.first_step = s.first_step;
      update.nonfinite_gradient = nonfinite_gradient;
      update.offset_base = begin;
      if (reduced) update.reduced = *reduced;
      sgd_update(params_.get() + begin, grads_.get() + begin,
                 s.momentum != 0.f ? optimizer_state("momentum") + begin : nullptr, low ? low + begin : nullptr, n,
                 update, stream);
      return;
    }
    case OptimizerKind::adamw: {
      const AdamWStepScalars s = adamw_step_scalars(spec, step);
      AdamWUpdate update;
      update.lr = s.lr, update.beta1 = spec.beta1, update.beta2 = spec.beta2, update.eps = s.eps;
      update.weight_decay = spec.weight_decay;
      update.bias_correction1 = s.bias_correction1, update.bias_correction2_sqrt = s.bias_correction2_sqrt;
      update.nonfinite_gradient = nonfinite_gradient;
      update.offset_base = begin;
      if (reduced) update.reduced = *reduced;
      adamw_update(params_.get() + begin, grads_.get() + begin, optimizer_state("exp_avg") + begin,
                   optimizer_state("exp_avg_sq") + begin, low ? low + begin : nullptr, n, update, stream);
      return;
    }
  }
}

}  // namespace ddpx
