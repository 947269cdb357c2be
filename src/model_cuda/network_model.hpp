// NetworkModel<Layout>: the part of a CUDA model family that is the same for every family: the family's layout and
// its precision-specific network (CudaNetwork: the forward and backward over activations of one operand type),
// chosen once from the precision, with CudaModel's forward/backward calls handed to it. A family derives from
// NetworkModel<ItsLayout>, defines its network as a class template over the operand type T, and calls
// build_network<ItsNetwork>() in its constructor (model_cuda/vit/, model_cuda/mlp/).
// Guarantees:
//  - bf16: the network is Network<__nv_bfloat16>, its matmuls in bf16 reading CudaModel's bf16 weight copy;
//    fp32/tf32: Network<float> reading the fp32 master params, in matmul_mode(precision).
//  - build_network() returns after everything the network's constructor enqueued has landed (callers upload
//    parameters right after construction).
//  - The network's contract is CudaModel's run_forward/run_forward_backward contract (cuda_model.hpp).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/cuda_check.hpp"
#include "model_cuda/cuda_model.hpp"

namespace ddpx {

class CudaNetwork {
 public:
  virtual ~CudaNetwork() = default;
  virtual void forward(const float* images, int64_t batch, float* logits) = 0;
  // write.overwrite: every gradient is written instead of added (zero_grads() zeroes nothing itself);
  // write.bf16_weights: the weight GEMMs write bf16 into their slots (cuda_model.hpp, Note [bf16 weight gradients
  // in their fp32 slots]; Network<float> never sees it).
  virtual void forward_backward(const float* images, const int32_t* labels, int64_t batch, float grad_scale,
                                float* loss, GradWrite write, const std::function<void(size_t, size_t)>& on_ready) = 0;
  virtual size_t activation_bytes() const = 0;
  virtual std::vector<BufferSpan> weight_gradient_slots() const = 0;  // CudaModel::weight_gradient_slots
};

template <typename Layout>
class NetworkModel : public CudaModel {
 public:
  size_t peak_activation_bytes() const override { return network_->activation_bytes(); }
  const Layout& layout() const { return layout_; }

 protected:
  NetworkModel(const Layout& layout, int64_t max_batch, Precision precision, cudaStream_t compute_stream)
      : CudaModel(layout, max_batch, precision, compute_stream), layout_(layout) {}

  // Network<T> is constructed from (layout, max batch, matmul mode, stream, fp32 params, T weights, fp32 grads).
  template <template <typename> class Network>
  void build_network() {
    if (precision() == Precision::bf16) {
      network_ = std::make_unique<Network<__nv_bfloat16>>(layout_, max_batch(), MatmulMode::bf16, stream(), params(),
                                                          low_precision_weights(), grads());
    } else {
      network_ = std::make_unique<Network<float>>(layout_, max_batch(), matmul_mode(precision()), stream(), params(),
                                                  params(), grads());
    }
    DDPX_CUDA_CHECK(cudaStreamSynchronize(stream()));
  }

  void run_forward(const float* d_images, int64_t batch, float* d_logits) override {
    network_->forward(d_images, batch, d_logits);
  }
  void run_forward_backward(const float* d_images, const int32_t* d_labels, int64_t batch, float grad_scale,
                            float* d_loss, GradWrite write,
                            const std::function<void(size_t, size_t)>& on_ready) override {
    network_->forward_backward(d_images, d_labels, batch, grad_scale, d_loss, write, on_ready);
  }
  std::vector<BufferSpan> weight_gradient_slots() const override { return network_->weight_gradient_slots(); }

 private:
  Layout layout_;
  std::unique_ptr<CudaNetwork> network_;
};

}  // namespace ddpx
