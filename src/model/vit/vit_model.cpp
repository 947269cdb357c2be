// The ViT family behind the Model interface (see vit_model.hpp for the guarantees).
#include "model/vit/vit_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/vit/vit_cpu.hpp"
#include "model/vit/vit_init.hpp"

namespace ddpx {
namespace {

class VitCpuModel final : public CpuModel {
 public:
  VitCpuModel(const VitLayout& layout, int64_t max_batch) : vit_(layout, max_batch) {}
  void forward(const float* params, const float* images, int64_t batch, float* logits) override {
    vit_.forward(params, images, batch, logits);
  }
  void backward(const float* params, const float* dlogits, float* grads, const ReadyFn& on_ready) override {
    vit_.backward(params, dlogits, grads, on_ready);
  }

 private:
  VitCpu<float> vit_;
};

bool accepts(std::string_view name) {
  if (name == "custom") return true;
  const std::vector<std::string> names = vit_model_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::unique_ptr<Model> parse(std::string_view spec, std::optional<int64_t> classes) {
  return std::make_unique<VitModel>(parse_vit_spec(spec, classes));
}

}  // namespace

void VitModel::init_params(float* params, uint64_t seed) const { init_vit_params(layout_, params, seed); }

double VitModel::cpu_activation_bytes(int64_t max_batch) const {
  return VitCpu<float>::activation_bytes(config(), max_batch);
}

std::unique_ptr<CpuModel> VitModel::make_cpu(int64_t max_batch) const {
  return std::make_unique<VitCpuModel>(layout_, max_batch);
}

std::string VitModel::summary() const {
  const VitConfig& c = config();
  return fmt::format("image {} patch {} ({} tokens), {} layers, hidden {}, {} heads, mlp {}, {} classes",
                     c.image_size, c.patch_size, c.seq_len(), c.num_layers, c.hidden_dim, c.num_heads, c.mlp_dim,
                     c.num_classes);
}

// Patch embedding, then per block the QKV projection, Q K^T and P V over every head, the output projection and the
// MLP's two layers, and the head on the class token (torchvision: 17.56 G multiply-adds for vit_b_16).
double VitModel::forward_flops_per_image() const {
  const VitConfig& c = config();
  const double n = static_cast<double>(c.seq_len()), d = static_cast<double>(c.hidden_dim),
               m = static_cast<double>(c.mlp_dim);
  const double per_block = n * d * 3 * d + 2 * n * n * d + n * d * d + 2 * n * d * m;
  const double macs = static_cast<double>(c.num_patches()) * static_cast<double>(c.patch_dim()) * d +
                      static_cast<double>(c.num_layers) * per_block + d * static_cast<double>(c.num_classes);
  return 2 * macs;
}

ModelFamily vit_family() {
  return ModelFamily{
      .name = "vit",
      .summary = "torchvision's VisionTransformer (patch embedding, pre-LN encoder blocks, class-token head)",
      .variants = vit_model_names(),
      .custom_syntax = "custom:image=..,patch=..,layers=..,hidden=..,heads=..,mlp=..,classes=..",
      .anchor_variants = {"vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"},  // torchvision's
      .test_variant = "vit_tiny_test",
      .accepts = &accepts,
      .parse = &parse,
  };
}

}  // namespace ddpx
