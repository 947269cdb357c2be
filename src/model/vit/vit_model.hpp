// VitModel: the Vision Transformer family behind the Model interface (model/model.hpp), and its registry entry.
// Guarantees: layout() is VitLayout (torchvision names, backward order); init_params is init_vit_params
// (torchvision's initialization); make_cpu wraps VitCpu<float>, whose backward announces VitLayout's ready spans;
// everything is exactly what the ViT code did before the Model seam existed (bit-identical results).
#pragma once
#include <memory>

#include "model/model.hpp"
#include "model/model_registry.hpp"
#include "model/vit/vit_config.hpp"
#include "model/vit/vit_layout.hpp"

namespace ddpx {

class VitModel final : public Model {
 public:
  explicit VitModel(const VitConfig& config) : layout_(config) {}

  const VitLayout& vit_layout() const { return layout_; }
  const VitConfig& config() const { return layout_.config(); }

  std::string_view family() const override { return "vit"; }
  const FlatLayout& layout() const override { return layout_; }
  InputShape input_shape() const override { return {config().channels, config().image_size}; }
  int64_t num_classes() const override { return config().num_classes; }
  void init_params(float* params, uint64_t seed) const override;
  double cpu_activation_bytes(int64_t max_batch) const override;
  std::unique_ptr<CpuModel> make_cpu(int64_t max_batch) const override;
  std::string summary() const override;
  double forward_flops_per_image() const override;

 private:
  VitLayout layout_;
};

// The registry's entry (model/model_registry.cpp).
ModelFamily vit_family();

}  // namespace ddpx
