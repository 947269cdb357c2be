// VitModel: the Vision Transformer family behind the Model interface (model/model.hpp; the layout, input shape and
// classes come from LayoutModel, model/layout_model.hpp), and its registry entry.
// Guarantees: layout() is VitLayout (torchvision names, backward order); init_params is init_vit_params
// (torchvision's initialization); make_cpu wraps VitCpu<float>, whose backward announces VitLayout's ready spans;
// everything is exactly what the ViT code did before the Model seam existed (bit-identical results).
#pragma once
#include <memory>

#include "model/layout_model.hpp"
#include "model/model_family.hpp"
#include "model/vit/vit_config.hpp"
#include "model/vit/vit_cpu.hpp"
#include "model/vit/vit_layout.hpp"

namespace ddpx {

class VitModel final : public LayoutModel<VitLayout, VitCpu<float>> {
 public:
  using LayoutModel::LayoutModel;

  const VitLayout& vit_layout() const { return layout_; }

  std::string_view family() const override { return "vit"; }
  void init_params(float* params, uint64_t seed) const override;
  std::string summary() const override;
  double forward_flops_per_image() const override;
};

// The registry's entry (model/model_registry.cpp).
ModelFamily vit_family();

}  // namespace ddpx
