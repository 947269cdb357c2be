// VitCuda: the single-GPU CUDA Vision Transformer (torchvision's VisionTransformer math, like VitCpu), training
// step and fused optimizers, over flat parameter/gradient buffers in ParamLayout's backward order.
// Guarantees:
//  - Owns, on the current device: fp32 master params and fp32 grads (layout.buffer_size() each, padding zero),
//    in bf16 mode a bf16 weight copy, all activations for max_batch (allocated once in the constructor), a
//    cuBLASLt workspace, and optimizer state (allocated by the first step that needs it).
//  - Every method enqueues on the compute stream given at construction and returns without host synchronization
//    (except where it allocates: construction and the first use of optimizer state). After one eager call of
//    forward_backward (which picks and caches the matmul algorithms) the step allocates nothing and can be
//    captured in a CUDA graph; captured optimizer steps replay the step number and hyper-parameters they saw.
//  - backward ADDS into grads (gradient accumulation); zero_grads() zeroes them. The first forward_backward after
//    zero_grads() (or construction) has its weight-gradient matmuls write instead of add: the same values
//    without reading the zeros. A captured forward_backward replays the choice it saw, so capture zero_grads()
//    with it (as a whole step does), or capture it after another forward_backward, never alone after an eager
//    zero_grads(). Writing into grads() between zero_grads() and forward_backward is not supported. on_ready(begin, end) is called
//    on the host right after the kernels that finish grads[begin, end) are enqueued, in VitCpu::backward's order:
//    [0, head_end), blocks L-1 .. 0, [embedding_begin, buffer_size).
//  - Deterministic: the same inputs give bit-identical results (no atomics; cached algorithms).
//  - Not thread-safe; one VitCuda per device/stream.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "cuda/device_buffer.hpp"
#include "model/param_layout.hpp"
#include "model/precision.hpp"
#include "optim/optimizer_spec.hpp"

namespace ddpx {

class VitCuda {
 public:
  class Engine;  // the precision-specific forward/backward (vit_cuda.cpp)

  VitCuda(const ParamLayout& layout, int64_t max_batch, Precision precision, cudaStream_t compute_stream);
  ~VitCuda();
  VitCuda(const VitCuda&) = delete;
  VitCuda& operator=(const VitCuda&) = delete;

  float* params() { return params_.get(); }  // device, fp32 master, layout().buffer_size() elements
  float* grads() { return grads_.get(); }    // device, fp32, same layout
  void zero_grads();
  // bf16 mode: refresh the bf16 weight copy from params (after uploading params); other modes: nothing to do.
  void sync_low_precision_weights();

  // Eval forward: d_images [batch, C, H, W] fp32, d_logits [batch, classes] fp32, both device.
  void forward(const float* d_images, int64_t batch, float* d_logits);
  // Training micro-step: forward, mean softmax cross-entropy into *d_loss (device fp32), backward of
  // grad_scale * loss added into grads(). d_labels: [batch] int32 device, in [0, classes) (else the loss is NaN).
  void forward_backward(const float* d_images, const int32_t* d_labels, int64_t batch, float grad_scale,
                        float* d_loss, const std::function<void(size_t, size_t)>& on_ready = {});

  // The spec's fused update over the flat buffers (and the bf16 copy in bf16 mode); step is 1 on the first call.
  // The step's scalars are the CPU's (optim/sgd.hpp sgd_step_scalars, optim/adamw.hpp adamw_step_scalars).
  // nonfinite_gradient (device, optional): lowered to the offset of any Inf/NaN gradient (kernels/optimizer.hpp).
  void optimizer_step(const OptimizerSpec& spec, int64_t step, unsigned long long* nonfinite_gradient = nullptr);
  // The same update over elements [begin, end) only, on `stream` (the updates are element-wise, so the spans of
  // one step together equal the whole step bit for bit; the non-finite offset is still one of the whole buffer).
  // begin and end are multiples of 4 (tensor offsets are).
  void optimizer_span(const OptimizerSpec& spec, int64_t step, size_t begin, size_t end, cudaStream_t stream,
                      unsigned long long* nonfinite_gradient = nullptr);

  // Optimizer state for checkpoints (device fp32, buffer_size() elements each), by the spec's state names
  // ("momentum", "exp_avg", "exp_avg_sq"; anything else is an error naming it). Each allocates (zeroed) on first
  // call: call it before capturing a graph.
  float* optimizer_state(std::string_view name);

  size_t peak_activation_bytes() const;
  const ParamLayout& layout() const { return layout_; }
  Precision precision() const { return precision_; }
  int64_t max_batch() const { return max_batch_; }
  cudaStream_t stream() const { return stream_; }

 private:
  float* lazily_allocated(DeviceBuffer<float>& buffer, const char* what);

  ParamLayout layout_;
  int64_t max_batch_;
  Precision precision_;
  cudaStream_t stream_;
  DeviceBuffer<float> params_, grads_;
  DeviceBuffer<__nv_bfloat16> low_precision_weights_;  // bf16 copy of params_ (bf16 mode only)
  DeviceBuffer<float> momentum_, exp_avg_, exp_avg_sq_;
  std::unique_ptr<Engine> engine_;
  bool grads_are_zero_ = true;  // host view: no forward_backward enqueued since the last zeroing
};

}  // namespace ddpx
