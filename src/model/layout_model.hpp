// LayoutModel<Layout>: the part of a family's Model that is the same for every family: it owns the family's
// layout, built from its config, and answers layout(), input_shape() and num_classes() from that config. A family
// derives from LayoutModel<ItsLayout>, implements the rest of Model and names its own typed accessor of layout_
// (vit_layout(), mlp_layout(): what model_cuda/cuda_models.cpp builds the CUDA form from). Layout::config() must
// have channels, image_size and num_classes.
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

#include "model/model.hpp"

namespace ddpx {

template <typename Layout>
class LayoutModel : public Model {
 public:
  using Config = std::decay_t<decltype(std::declval<const Layout&>().config())>;

  explicit LayoutModel(const Config& config) : layout_(config) {}

  const Config& config() const { return layout_.config(); }

  const FlatLayout& layout() const override { return layout_; }
  InputShape input_shape() const override { return {config().channels, config().image_size}; }
  int64_t num_classes() const override { return config().num_classes; }

 protected:
  Layout layout_;
};

}  // namespace ddpx
