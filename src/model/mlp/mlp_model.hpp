// MlpModel: the MLP classifier family (model/mlp/mlp_config.hpp) behind the Model interface, and its registry
// entry. Guarantees: layout() is MlpLayout (torch.nn.Linear names, backward order); init_params is torch.nn.Linear's
// default (mlp_init.hpp); make_cpu wraps MlpCpu<float>, whose backward announces MlpLayout's ready spans.
#pragma once
#include <memory>

#include "model/mlp/mlp_config.hpp"
#include "model/mlp/mlp_layout.hpp"
#include "model/model.hpp"
#include "model/model_registry.hpp"

namespace ddpx {

class MlpModel final : public Model {
 public:
  explicit MlpModel(const MlpConfig& config) : layout_(config) {}

  const MlpLayout& mlp_layout() const { return layout_; }
  const MlpConfig& config() const { return layout_.config(); }

  std::string_view family() const override { return "mlp"; }
  const FlatLayout& layout() const override { return layout_; }
  InputShape input_shape() const override { return {config().channels, config().image_size}; }
  int64_t num_classes() const override { return config().num_classes; }
  void init_params(float* params, uint64_t seed) const override;
  double cpu_activation_bytes(int64_t max_batch) const override;
  std::unique_ptr<CpuModel> make_cpu(int64_t max_batch) const override;
  std::string summary() const override;
  double forward_flops_per_image() const override;

 private:
  MlpLayout layout_;
};

// The registry's entry (model/model_registry.cpp).
ModelFamily mlp_family();

}  // namespace ddpx
