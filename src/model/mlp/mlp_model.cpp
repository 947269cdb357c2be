// The MLP family behind the Model interface (see mlp_model.hpp for the guarantees).
#include "model/mlp/mlp_model.hpp"

#include <fmt/format.h>

#include "model/mlp/mlp_init.hpp"

namespace ddpx {

void MlpModel::init_params(float* params, uint64_t seed) const { init_mlp_params(layout_, params, seed); }

std::string MlpModel::summary() const {
  const MlpConfig& c = config();
  return fmt::format("image {0}x{0}x{1} flattened ({2} features), {3} hidden layers of {4} with GELU, {5} classes",
                     c.image_size, c.channels, c.in_features(), c.num_layers, c.width, c.num_classes);
}

// Every Linear layer: in x out multiply-adds per image.
double MlpModel::forward_flops_per_image() const {
  const MlpConfig& c = config();
  double macs = static_cast<double>(c.num_classes) * static_cast<double>(c.width);
  for (int64_t l = 0; l < c.num_layers; ++l) macs += static_cast<double>(c.layer_in(l)) * static_cast<double>(c.width);
  return 2 * macs;
}

ModelFamily mlp_family() {
  return ModelFamily{
      .name = "mlp",
      .summary = "an MLP classifier over flattened images (Linear + GELU hidden layers, Linear head)",
      .variants = mlp_model_names(),
      .custom_syntax = "mlp:image=..,channels=..,layers=..,width=..,classes=..",
      .test_variant = "mlp_tiny_test",
      .custom_name = "mlp",
      .parse = &parse_family_spec<MlpModel, &parse_mlp_spec>,
  };
}

}  // namespace ddpx
