// The MLP family behind the Model interface (see mlp_model.hpp for the guarantees).
#include "model/mlp/mlp_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/mlp/mlp_cpu.hpp"
#include "model/mlp/mlp_init.hpp"

namespace ddpx {
namespace {

class MlpCpuModel final : public CpuModel {
 public:
  MlpCpuModel(const MlpLayout& layout, int64_t max_batch) : mlp_(layout, max_batch) {}
  void forward(const float* params, const float* images, int64_t batch, float* logits) override {
    mlp_.forward(params, images, batch, logits);
  }
  void backward(const float* params, const float* dlogits, float* grads, const ReadyFn& on_ready) override {
    mlp_.backward(params, dlogits, grads, on_ready);
  }

 private:
  MlpCpu<float> mlp_;
};

bool accepts(std::string_view name) {
  if (name == "mlp") return true;
  const std::vector<std::string> names = mlp_model_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::unique_ptr<Model> parse(std::string_view spec, std::optional<int64_t> classes) {
  return std::make_unique<MlpModel>(parse_mlp_spec(spec, classes));
}

}  // namespace

void MlpModel::init_params(float* params, uint64_t seed) const { init_mlp_params(layout_, params, seed); }

double MlpModel::cpu_activation_bytes(int64_t max_batch) const {
  return MlpCpu<float>::activation_bytes(config(), max_batch);
}

std::unique_ptr<CpuModel> MlpModel::make_cpu(int64_t max_batch) const {
  return std::make_unique<MlpCpuModel>(layout_, max_batch);
}

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
      .accepts = &accepts,
      .parse = &parse,
  };
}

}  // namespace ddpx
