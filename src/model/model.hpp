// Model: what the trainer, the engines, io and the CLI know of a model family, device aside; CpuModel: a family's
// CPU reference forward/backward over caller-owned flat buffers. Families implement both (model/vit/, model/mlp/)
// and register in model/model_registry.cpp; their CUDA forms implement model_cuda/cuda_model.hpp.
// Guarantees every implementation keeps (the engines and the reducer rely on them):
//  - Parameters and gradients are flat fp32 buffers of layout().buffer_size() elements in layout()'s order;
//    padding is 0 and is never written.
//  - Images are [batch, channels, image_size, image_size] fp32 row-major (input_shape()); logits are
//    [batch, num_classes()]; the loss is softmax cross-entropy (model/cross_entropy.hpp).
//  - CpuModel::backward ADDS (+=) into every parameter gradient (so gradient accumulation works; the caller zeroes)
//    and calls on_ready(begin, end) once per layout().ready_spans() entry, in that (buffer) order, as soon as
//    grads[begin, end) are final and the rest of the backward pass no longer reads params[begin, end) (so an
//    optimizer may update that span at once: Note [Optimizer overlapped with backward], train/step_engine.hpp).
//  - init_params() is deterministic in (spec, seed) on every platform and zeroes the padding.
//  - A CpuModel owns its activation storage, sized for max_batch when made; a larger batch is a ddpx::Error.
//    Not thread-safe: one CpuModel per thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/flat_layout.hpp"

namespace ddpx {

using ReadyFn = std::function<void(size_t begin, size_t end)>;

// Square images, as the data sources produce them.
struct InputShape {
  int64_t channels = 3;
  int64_t image_size = 224;
  int64_t numel() const { return channels * image_size * image_size; }
};

class CpuModel {
 public:
  virtual ~CpuModel() = default;
  // images [batch, C, H, W], params flat, logits [batch, classes]. Keeps what backward() needs.
  virtual void forward(const float* params, const float* images, int64_t batch, float* logits) = 0;
  // Backward of the last forward: grads += d(loss)/d(params) given dlogits = d(loss)/d(logits).
  virtual void backward(const float* params, const float* dlogits, float* grads, const ReadyFn& on_ready) = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string_view family() const = 0;  // the registry's family name: "vit", "mlp"
  virtual const FlatLayout& layout() const = 0;
  const std::string& spec() const { return layout().spec(); }
  virtual InputShape input_shape() const = 0;
  virtual int64_t num_classes() const = 0;
  // The family's reference initialization (torchvision's for the ViT, torch.nn's defaults for the MLP) of a
  // buffer of layout().buffer_size() elements.
  virtual void init_params(float* params, uint64_t seed) const = 0;
  // The bytes make_cpu(max_batch) allocates for activations (double: no overflow), so that a caller can refuse a
  // batch that cannot fit before anything is touched.
  virtual double cpu_activation_bytes(int64_t max_batch) const = 0;
  virtual std::unique_ptr<CpuModel> make_cpu(int64_t max_batch) const = 0;
  // One line for `ddpx model`: the shape in the family's terms ("image 16 patch 4 (17 tokens), 2 layers, ...").
  virtual std::string summary() const = 0;
  // FLOPs of one image's forward pass, 2 per multiply-add of the matrix products (what torchvision lists as
  // `_ops`, times 2; normalizations, activations and adds are not counted). A training step is about 3 times this
  // per image: the figure model FLOP utilization (MFU) is computed from.
  virtual double forward_flops_per_image() const = 0;
};

}  // namespace ddpx
