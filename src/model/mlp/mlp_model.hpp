// MlpModel: the MLP classifier family (model/mlp/mlp_config.hpp) behind the Model interface (the layout, input
// shape and classes come from LayoutModel, model/layout_model.hpp), and its registry entry. Guarantees: layout() is MlpLayout (torch.nn.Linear names, backward order); init_params is torch.nn.Linear's
// default (mlp_init.hpp); make_cpu wraps MlpCpu<float>, whose backward announces MlpLayout's ready spans.
#pragma once
#include <memory>

#include "model/mlp/mlp_config.hpp"
#include "model/mlp/mlp_cpu.hpp"
#include "model/mlp/mlp_layout.hpp"
#include "model/layout_model.hpp"
#include "model/model_family.hpp"

namespace ddpx {

class MlpModel final : public LayoutModel<MlpLayout, MlpCpu<float>> {
 public:
  using LayoutModel::LayoutModel;

  const MlpLayout& mlp_layout() const { return layout_; }

  std::string_view family() const override { return "mlp"; }
  void init_params(float* params, uint64_t seed) const override;
  std::string summary() const override;
  double forward_flops_per_image() const override;
};

// The registry's entry (model/model_registry.cpp).
ModelFamily mlp_family();

}  // namespace ddpx
