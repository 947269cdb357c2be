// MlpCuda implementation; see mlp_cuda.hpp for the data flow and the guarantees.
#include "model_cuda/mlp/mlp_cuda.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "kernels/column_sum.hpp"
#include "kernels/gelu.hpp"
#include "kernels/matmul.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/softmax_xent.hpp"
#include "model_cuda/device_buffer.hpp"
#include "model_cuda/weight_gradient_output.hpp"

namespace ddpx {

namespace {

template <typename T>
class MlpNetwork final : public CudaNetwork {
 public:
  MlpNetwork(const MlpLayout& layout, int64_t max_batch, MatmulMode mode, cudaStream_t stream, const float* params,
             const T* weights, float* grads)
      : layout_(layout),
        config_(layout.config()),
        max_batch_(max_batch),
        stream_(stream),
        matmul_(mode),
        params_(params),
        weights_(weights),
        grads_(grads) {
    const auto B = static_cast<size_t>(max_batch), W = static_cast<size_t>(config_.width);
    const auto C = static_cast<size_t>(config_.num_classes);
    const std::string what = " of the CUDA MLP (" + layout.spec() + ", batch " + std::to_string(max_batch) + ")";
    if constexpr (!std::is_same_v<T, float>)
      input_ = DeviceBuffer<T>(B * static_cast<size_t>(config_.in_features()), "the low-precision input" + what);
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      pre_.emplace_back(B * W, "the pre-activations" + what);
      post_.emplace_back(B * W, "the activations" + what);
    }
    logits_ = DeviceBuffer<float>(B * C, "the logits" + what);
    row_loss_ = DeviceBuffer<float>(B, "the per-image losses" + what);
    dlogits_ = DeviceBuffer<T>(B * C, "the logit gradients" + what);
    d_a_ = DeviceBuffer<T>(B * W, "the activation gradients" + what);
    d_b_ = DeviceBuffer<T>(B * W, "the activation gradients" + what);
    scratch_floats_ = std::max(column_sum_scratch_floats(static_cast<int64_t>(std::max(W, C))),
                               gelu_backward_scratch_floats(max_batch, config_.width));
    scratch_ = DeviceBuffer<float>(scratch_floats_, "the reduction scratch" + what);
  }

  size_t activation_bytes() const override {
    size_t bytes = input_.bytes() + logits_.bytes() + row_loss_.bytes() + dlogits_.bytes() + d_a_.bytes() +
                   d_b_.bytes() + scratch_.bytes();
    for (size_t l = 0; l < pre_.size(); ++l) bytes += pre_[l].bytes() + post_[l].bytes();
    return bytes;
  }

  void forward(const float* images, int64_t batch, float* logits) override {
    DDPX_REQUIRE(batch > 0 && batch <= max_batch_,
                 "batch {} is outside [1, {}], the maximum batch this CUDA model ({}) was built for", batch,
                 max_batch_, layout_.spec());
    batch_ = batch;
    const T* x = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      x = images;
    } else {
      cast_to_bf16(images, input_.get(), batch * config_.in_features(), stream_);
      x = input_.get();
    }
    for (size_t l = 0; l < layout_.hidden.size(); ++l) {
      const LinearOffsets& o = layout_.hidden[l];
      linear(x, o, pre_[l].get(), false, "hidden layer forward");
      gelu_forward<T>(pre_[l].get(), post_[l].get(), batch * o.out, stream_);
      x = post_[l].get();
    }
    linear(x, layout_.head, logits, true, "classification head forward");
  }

  // Every weight GEMM's output tensor (Note [bf16 weight gradients in their fp32 slots], cuda_model.hpp).
  std::vector<BufferSpan> weight_gradient_slots() const override {
    std::vector<BufferSpan> slots;
    auto add = [&](const LinearOffsets& o) { slots.push_back({o.weight, o.weight + static_cast<size_t>(o.out * o.in)}); };
    add(layout_.head);
    for (const LinearOffsets& o : layout_.hidden) add(o);
    return slots;
  }

  void forward_backward(const float* images, const int32_t* labels, int64_t batch, float grad_scale, float* loss,
                        GradWrite write, const std::function<void(size_t, size_t)>& on_ready) override {
    // After zero_grads() every slot is written once, nothing added: the weight matmuls with beta 0, the bias
    // column sums (head: column_sum; hidden: inside GELU backward) with overwrite (cuda_model.hpp).
    writing_ = gradient_writing<T>(write.overwrite, write.bf16_weights);
    forward(images, batch, logits_.get());
    const int64_t C = config_.num_classes;
    class_cross_entropy<T>(write.targets, logits_.get(), labels, batch, C, grad_scale, loss, dlogits_.get(),
                           row_loss_.get(), stream_);
    const std::vector<BufferSpan>& spans = layout_.ready_spans();
    auto ready = [&](size_t span) {
      if (on_ready) on_ready(spans[span].begin, spans[span].end);
    };
    const size_t L = layout_.hidden.size();
    const LinearOffsets& h = layout_.head;
    weight_gradient(dlogits_.get(), post_[L - 1].get(), h, "classification head weight gradient");
    column_sum(dlogits_.get(), C, batch, C, grads_ + h.bias);
    T* d_out = d_a_.get();  // d(output of the layer being differentiated)
    T* d_in = d_b_.get();
    input_gradient(dlogits_.get(), h, d_out, "classification head input gradient");
    ready(0);
    for (size_t l = L; l-- > 0;) {
      const LinearOffsets& o = layout_.hidden[l];
      // d_out becomes d(pre-activation) in place; the layer's bias gradient is its column sums.
      gelu_backward<T>(pre_[l].get(), d_out, batch, o.out, grads_ + o.bias, scratch_.get(), scratch_floats_,
                       stream_, writing_.overwrite);
      const T* x = l > 0 ? post_[l - 1].get() : input_of(images);
      weight_gradient(d_out, x, o, "hidden layer weight gradient");
      if (l > 0) {
        input_gradient(d_out, o, d_in, "hidden layer input gradient");
        std::swap(d_out, d_in);
      }
      ready(L - l);
    }
  }

 private:
  const T* input_of(const float* images) const {
    if constexpr (std::is_same_v<T, float>) return images;
    else return input_.get();
  }

  template <typename In>
  void column_sum(const In* in, int64_t ld, int64_t rows, int64_t cols, float* out) {
    ColumnSumArgs<In> args;
    args.in = in, args.ld = ld, args.rows = rows, args.cols = cols, args.outputs[0] = out;
    args.overwrite = writing_.overwrite;
    args.scratch = scratch_.get(), args.scratch_floats = scratch_floats_;
    column_sum_add(args, stream_);
  }

  // y[batch, out] = x[batch, in] W^T + b, W stored [out, in] like torch.nn.Linear; y fp32 or T.
  void linear(const T* x, const LinearOffsets& o, void* y, bool y_fp32, const char* what) {
    MatmulCall call;
    call.m = batch_, call.n = o.out, call.k = o.in;
    call.a = {x, o.in, false};
    call.b = {weights_ + o.weight, o.in, true};
    call.out = y, call.ld_out = o.out, call.out_fp32 = y_fp32;
    call.bias = y_fp32 ? static_cast<const void*>(params_ + o.bias) : static_cast<const void*>(weights_ + o.bias);
    matmul_.run(call, stream_, what);
  }

  // grads[weight] += dy^T x (= when the grads are zero), dy [batch, out], x [batch, in].
  void weight_gradient(const T* dy, const T* x, const LinearOffsets& o, const char* what) {
    MatmulCall call;
    call.m = o.out, call.n = o.in, call.k = batch_;
    call.a = {dy, o.out, true};
    call.b = {x, o.in, false};
    set_weight_gradient_output<T>(call, grads_, o.weight, o.in, writing_.weight_beta, writing_.bf16_weights);
    matmul_.run(call, stream_, what);
  }

  // dx[batch, in] = dy[batch, out] W (T-typed), W stored [out, in].
  void input_gradient(const T* dy, const LinearOffsets& o, T* dx, const char* what) {
    MatmulCall call;
    call.m = batch_, call.n = o.in, call.k = o.out;
    call.a = {dy, o.out, false};
    call.b = {weights_ + o.weight, o.in, false};
    call.out = dx, call.ld_out = o.in, call.out_fp32 = false;
    matmul_.run(call, stream_, what);
  }

  const MlpLayout& layout_;
  const MlpConfig& config_;
  int64_t max_batch_;
  int64_t batch_ = 0;
  GradientWriting writing_;  // this forward_backward's (weight_gradient_output.hpp)
  cudaStream_t stream_;
  MatmulEngine matmul_;
  const float* params_;  // fp32 master: the fp32-output (head) bias
  const T* weights_;     // matmul operands and T-output biases (== params_ unless bf16)
  float* grads_;
  DeviceBuffer<T> input_;  // bf16 mode: the images cast to bf16 (unused in fp32)
  std::vector<DeviceBuffer<T>> pre_, post_;
  DeviceBuffer<float> logits_, row_loss_;
  DeviceBuffer<T> dlogits_, d_a_, d_b_;
  DeviceBuffer<float> scratch_;
  size_t scratch_floats_ = 0;
};

}  // namespace

MlpCuda::MlpCuda(const MlpLayout& layout, int64_t max_batch, Precision precision, cudaStream_t compute_stream)
    : NetworkModel(layout, max_batch, precision, compute_stream) {
  const MlpConfig& c = layout.config();
  DDPX_REQUIRE(c.width % 4 == 0 && c.in_features() % 4 == 0,
               "model '{}': the CUDA MLP needs a width and a flattened input size (channels x image^2) that are "
               "multiples of 4, got width {} and {} inputs; change them or use --device cpu",
               layout.spec(), c.width, c.in_features());
  build_network<MlpNetwork>();
}

}  // namespace ddpx
