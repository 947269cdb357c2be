// CudaModel: what every CUDA model family shares: the device parameter store (fp32 master params and grads over
// the family's FlatLayout, the bf16 weight copy, optimizer state), the fused optimizer update, and the training-step
// calls the engine makes. A family (model_cuda/vit/, model_cuda/mlp/) derives from it and implements the forward
// and backward (run_forward, run_forward_backward); it is made through model_cuda/cuda_models.hpp.
// Guarantees:
//  - Owns, on the current device: fp32 master params and fp32 grads (layout.buffer_size() each, padding zero),
//    in bf16 mode a bf16 weight copy, and optimizer state (allocated, zeroed, by the first use of each buffer).
//  - Every method enqueues on the compute stream given at construction and returns without host synchronization
//    (except where it allocates: construction and the first use of optimizer state).
//  - backward ADDS into grads (gradient accumulation). zero_grads() makes the next forward_backward WRITE every
//    gradient instead of adding: the family is told grads_are_zero and must then write every tensor slot exactly
//    once (weight-gradient matmuls with beta 0, bias/LayerNorm/embedding column sums with overwrite): the result of
//    zeroing the buffer first, without a pass over it (1.2 GB for ViT-L/32, about 3% of a bf16 step on an H200).
//    So grads() between zero_grads() and the next forward_backward hold the old values, and padding is never
//    written (it stays zero from construction). A captured forward_backward replays the choice it saw, so capture
//    zero_grads() with it (as a whole step does), or capture it after another forward_backward, never alone after
//    an eager zero_grads(). Writing into grads() between zero_grads() and forward_backward is not supported.
//  - on_ready(begin, end) is called on the host right after the kernels that finish grads[begin, end) are
//    enqueued, once per layout().ready_spans() entry, in that order, after the last kernel reading those params.
//  - optimizer_span over disjoint spans covering the buffer equals optimizer_step bit for bit (element-wise).
//  - use_bf16_weight_gradients() (bf16 mode): Note [bf16 weight gradients in their fp32 slots].
//  - Not thread-safe; one CudaModel per device/stream.
//
// Note [bf16 weight gradients in their fp32 slots]
// Under PyTorch autocast a linear layer's weight gradient leaves its bf16 GEMM rounded to bf16 before it reaches
// the fp32 .grad. After use_bf16_weight_gradients() the weight-gradient GEMMs here do the same: they write bf16,
// into the first half of the tensor's own fp32 slots (element i of a weight at reinterpret_cast<bf16*>(grads() +
// offset)[i]), and the optimizer widens them in its pass (core/reduced_gradients.hpp, PackedBf16Gradients); every
// other gradient (biases, LayerNorm, embeddings: column sums) stays fp32. That saves 4 of the 18 bytes each weight
// element moves per step (2 written by the GEMM, 2 read by the update) and no memory. The regions are the family's
// weight_gradient_slots(). Holds only while every forward_backward writes the gradients (each step zeroes them
// before one micro-batch): bf16 slots cannot be accumulated into, so a forward_backward that would add is an
// internal error; and grads() then holds the mixed form, so a reducer whose hook reads its fp32 buckets must not be
// given it (the trainer's choice: train/train_options.hpp weight_grads_in_bf16). The allreduce hook at one rank
// reads nothing (comm_plan/hook_catalogue.hpp: comm_hook_reads_bucket): `--ddp` there takes bf16 weight gradients
// and equals the plain run bit for bit.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/matmul.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/recipe.hpp"
#include "kernels/softmax_xent.hpp"
#include "model/flat_layout.hpp"
#include "model/precision.hpp"
#include "model_cuda/device_buffer.hpp"
#include "optim/optimizer_spec.hpp"

namespace ddpx {

// The targets of the loss, model/cross_entropy.hpp's ClassTargets on the device: label smoothing and, after mixup
// or cutmix, each row's partner label (device, [batch] int32) with the weight `mix` of its own label. The default is
// the hard labels (softmax_xent.hpp's loss, the kernels of every run without the recipe).
struct DeviceClassTargets {
  float label_smoothing = 0;
  const int32_t* mixed_labels = nullptr;
  float mix = 1;
  bool hard() const { return label_smoothing == 0 && mixed_labels == nullptr; }
};

// The loss and its gradient for the families' forward_backward: the mean cross-entropy against `targets`
// (softmax_xent.hpp's hard-label kernels when there are none, as in every run without the recipe).
template <typename T>
void class_cross_entropy(const DeviceClassTargets& targets, const float* logits, const int32_t* labels, int64_t batch,
                         int64_t classes, float grad_scale, float* loss, T* dlogits, float* row_loss,
                         cudaStream_t stream) {
  if (targets.hard())
    return softmax_cross_entropy<T>(logits, labels, batch, classes, grad_scale, loss, dlogits, row_loss, stream);
  softmax_cross_entropy_soft<T>(logits, labels, targets.mixed_labels, targets.mix, targets.label_smoothing, batch,
                                classes, grad_scale, loss, dlogits, row_loss, stream);
}

// How one forward_backward writes the gradients (cuda_model.hpp's guarantees), and against which targets.
struct GradWrite {
  bool overwrite = false;     // the grads are zero: write every slot once instead of adding
  bool bf16_weights = false;  // Note [bf16 weight gradients in their fp32 slots] (only with overwrite)
  DeviceClassTargets targets;  // CudaModel::set_class_targets
};

class CudaModel {
 public:
  CudaModel(const FlatLayout& layout, int64_t max_batch, Precision precision, cudaStream_t compute_stream);
  virtual ~CudaModel();
  CudaModel(const CudaModel&) = delete;
  CudaModel& operator=(const CudaModel&) = delete;

  float* params() { return params_.get(); }  // device, fp32 master, layout().buffer_size() elements
  float* grads() { return grads_.get(); }    // device, fp32, same layout (but see use_bf16_weight_gradients)
  void zero_grads();
  // Note [bf16 weight gradients in their fp32 slots]: bf16 mode only (else an internal error), before the first
  // forward_backward; a family without weight GEMMs (no weight_gradient_slots) keeps all gradients fp32.
  void use_bf16_weight_gradients();
  bool bf16_weight_gradients() const { return !bf16_regions_host_.empty(); }
  // The regions of grads() holding bf16 (empty unless use_bf16_weight_gradients()), for tests and tools.
  const std::vector<PackedBf16Region>& bf16_gradient_regions() const { return bf16_regions_host_; }
  // bf16 mode: refresh the bf16 weight copy from params (after uploading params); other modes: nothing to do.
  void sync_low_precision_weights();

  // Eval forward: d_images [batch, C, H, W] fp32, d_logits [batch, classes] fp32, both device.
  void forward(const float* d_images, int64_t batch, float* d_logits);
  // Training micro-step: forward, mean softmax cross-entropy into *d_loss (device fp32), backward of
  // grad_scale * loss added into grads(). d_labels: [batch] int32 device, in [0, classes) (else the loss is NaN).
  void forward_backward(const float* d_images, const int32_t* d_labels, int64_t batch, float grad_scale,
                        float* d_loss, const std::function<void(size_t, size_t)>& on_ready = {});
  // The targets the following forward_backward calls train towards (--label-smoothing, --mixup/--cutmix).
  void set_class_targets(const DeviceClassTargets& targets) { targets_ = targets; }

  // The spec's fused update over the flat buffers (and the bf16 copy in bf16 mode); step is 1 on the first call.
  // The step's scalars are the CPU's (optim/sgd.hpp sgd_step_scalars, optim/adamw.hpp adamw_step_scalars).
  // nonfinite_gradient (device, optional): lowered to the offset of any Inf/NaN gradient (kernels/optimizer.hpp).
  void optimizer_step(const OptimizerSpec& spec, int64_t step, unsigned long long* nonfinite_gradient = nullptr);
  // The same update over elements [begin, end) only, on `stream` (the updates are element-wise, so the spans of
  // one step together equal the whole step bit for bit; the non-finite offset is still one of the whole buffer).
  // begin and end are multiples of 4 (tensor offsets are).
  // `reduced`: where the span's averaged gradients are when not in grads() (core/reduced_gradients.hpp; element
  // `begin` at reduced->data[0] for a 16-bit wire); nullptr or in_buffer(): in grads().
  void optimizer_span(const OptimizerSpec& spec, int64_t step, size_t begin, size_t end, cudaStream_t stream,
                      unsigned long long* nonfinite_gradient = nullptr, const ReducedGradients* reduced = nullptr);

  // Optimizer state for checkpoints (device fp32, buffer_size() elements each), by the spec's state names
  // ("momentum", "exp_avg", "exp_avg_sq"; anything else is an internal error naming it). Each allocates (zeroed)
  // on first call: call it before capturing a graph.
  float* optimizer_state(std::string_view name);

  virtual size_t peak_activation_bytes() const = 0;
  const FlatLayout& flat_layout() const { return flat_; }
  Precision precision() const { return precision_; }
  int64_t max_batch() const { return max_batch_; }
  cudaStream_t stream() const { return stream_; }

 protected:
  // The family's forward and backward (see the guarantees above).
  virtual void run_forward(const float* d_images, int64_t batch, float* d_logits) = 0;
  virtual void run_forward_backward(const float* d_images, const int32_t* d_labels, int64_t batch, float grad_scale,
                                    float* d_loss, GradWrite write,
                                    const std::function<void(size_t, size_t)>& on_ready) = 0;
  // The tensors whose gradients the family's weight GEMMs write (whole tensors, in any order; CudaModel sorts
  // them): where Note [bf16 weight gradients in their fp32 slots] puts bf16.
  virtual std::vector<BufferSpan> weight_gradient_slots() const = 0;
  __nv_bfloat16* low_precision_weights() { return low_precision_weights_.get(); }  // nullptr unless bf16

 private:
  float* lazily_allocated(DeviceBuffer<float>& buffer, const char* what);

  FlatLayout flat_;
  int64_t max_batch_;
  Precision precision_;
  cudaStream_t stream_;
  DeviceBuffer<float> params_, grads_;
  DeviceBuffer<__nv_bfloat16> low_precision_weights_;  // bf16 copy of params_ (bf16 mode only)
  DeviceBuffer<float> momentum_, exp_avg_, exp_avg_sq_;
  DeviceClassTargets targets_;
  bool grads_are_zero_ = true;  // host view: no forward_backward enqueued since the last zeroing
  std::vector<PackedBf16Region> bf16_regions_host_;  // Note [bf16 weight gradients in their fp32 slots]
  DeviceBuffer<PackedBf16Region> bf16_regions_;
};

// The matmul mode of a precision (kernels/matmul.hpp).
MatmulMode matmul_mode(Precision precision);

}  // namespace ddpx
