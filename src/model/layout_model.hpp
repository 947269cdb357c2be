// LayoutModel<Layout, CpuNet>: the part of a family's Model that is the same for every family, written once: it
// owns the family's layout, built from its config, answers layout(), input_shape() and num_classes() from that
// config, and builds the CPU form: make_cpu() puts the family's reference network CpuNet (MlpCpu<float>,
// VitCpu<float>; built from the layout and the largest batch, with forward and backward as CpuModel's) behind
// CpuModel, and cpu_activation_bytes() is CpuNet::activation_bytes(config, max_batch). A family derives from
// LayoutModel<ItsLayout, ItsCpuNet>, implements the rest of Model and names its own typed accessor of layout_
// (vit_layout(), mlp_layout(): what model_cuda/cuda_models.cpp builds the CUDA form from). Layout::config() must
// have channels, image_size and num_classes.
#pragma once
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "model/model.hpp"

namespace ddpx {

// A family's reference network behind CpuModel.
template <typename CpuNet>
class CpuNetModel final : public CpuModel {
 public:
  template <typename Layout>
  CpuNetModel(const Layout& layout, int64_t max_batch) : net_(layout, max_batch) {}
  void forward(const float* params, const float* images, int64_t batch, float* logits) override {
    net_.forward(params, images, batch, logits);
  }
  void backward(const float* params, const float* dlogits, float* grads, const ReadyFn& on_ready) override {
    net_.backward(params, dlogits, grads, on_ready);
  }

 private:
  CpuNet net_;
};

template <typename Layout, typename CpuNet>
class LayoutModel : public Model {
 public:
  using Config = std::decay_t<decltype(std::declval<const Layout&>().config())>;

  explicit LayoutModel(const Config& config) : layout_(config) {}

  const Config& config() const { return layout_.config(); }

  const FlatLayout& layout() const override { return layout_; }
  InputShape input_shape() const override { return {config().channels, config().image_size}; }
  int64_t num_classes() const override { return config().num_classes; }
  double cpu_activation_bytes(int64_t max_batch) const override {
    return CpuNet::activation_bytes(config(), max_batch);
  }
  std::unique_ptr<CpuModel> make_cpu(int64_t max_batch) const override {
    return std::make_unique<CpuNetModel<CpuNet>>(layout_, max_batch);
  }

 protected:
  Layout layout_;
};

}  // namespace ddpx
