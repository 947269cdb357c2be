// Named ViT shapes (torchvision's table) and the model-spec parser.
#include "model/vit/vit_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "core/error.hpp"
#include "model/spec_overrides.hpp"

namespace ddpx {
namespace {

VitConfig make(std::string name, int64_t image, int64_t patch, int64_t layers, int64_t heads, int64_t hidden,
               int64_t mlp, int64_t classes) {
  VitConfig c;
  c.name = std::move(name);
  c.image_size = image;
  c.patch_size = patch;
  c.num_layers = layers;
  c.num_heads = heads;
  c.hidden_dim = hidden;
  c.mlp_dim = mlp;
  c.num_classes = classes;
  return c;
}

const std::map<std::string, VitConfig, std::less<>>& named_configs() {
  static const std::map<std::string, VitConfig, std::less<>> table = {
      // torchvision.models.vit_* (image 224, 1000 classes)
      {"vit_b_16", make("vit_b_16", 224, 16, 12, 12, 768, 3072, 1000)},
      {"vit_b_32", make("vit_b_32", 224, 32, 12, 12, 768, 3072, 1000)},
      {"vit_l_16", make("vit_l_16", 224, 16, 24, 16, 1024, 4096, 1000)},
      {"vit_l_32", make("vit_l_32", 224, 32, 24, 16, 1024, 4096, 1000)},
      {"vit_h_14", make("vit_h_14", 224, 14, 32, 16, 1280, 5120, 1000)},
      // Small shapes for tests and the CPU demo run.
      {"vit_tiny_test", make("vit_tiny_test", 16, 4, 2, 4, 32, 64, 10)},
      {"vit_small_test", make("vit_small_test", 32, 4, 4, 4, 128, 256, 10)},
  };
  return table;
}


}  // namespace

void VitConfig::validate() const {
  auto positive = [&](const char* field, int64_t v) {
    DDPX_REQUIRE(v > 0, "model '{}': {} must be positive, got {}", name, field, v);
  };
  positive("image", image_size);
  positive("patch", patch_size);
  positive("channels", channels);
  positive("layers", num_layers);
  positive("heads", num_heads);
  positive("hidden", hidden_dim);
  positive("mlp", mlp_dim);
  positive("classes", num_classes);
  DDPX_REQUIRE(image_size % patch_size == 0,
               "model '{}': image size {} is not divisible by patch size {}; pick a patch that divides it", name,
               image_size, patch_size);
  DDPX_REQUIRE(hidden_dim % num_heads == 0,
               "model '{}': hidden width {} is not divisible by {} heads; pick a head count that divides it",
               name, hidden_dim, num_heads);
  // Sizes beyond these are typos, and their products would overflow 64-bit counts (computed in double here).
  constexpr int64_t kMaxSize = int64_t{1} << 24;
  auto bounded = [&](const char* field, int64_t v) {
    DDPX_REQUIRE(v <= kMaxSize, "model '{}': {} = {} is beyond the supported {}", name, field, v, kMaxSize);
  };
  bounded("image", image_size);
  bounded("channels", channels);
  bounded("layers", num_layers);
  bounded("heads", num_heads);
  bounded("hidden", hidden_dim);
  bounded("mlp", mlp_dim);
  bounded("classes", num_classes);
  const double tokens = static_cast<double>(patches_per_side()) * static_cast<double>(patches_per_side());
  DDPX_REQUIRE(tokens <= double(int64_t{1} << 20),
               "model '{}': image {} in patches of {} gives {:.0f} tokens per image, beyond the supported {}; use a "
               "larger patch", name, image_size, patch_size, tokens, int64_t{1} << 20);
  const double D = static_cast<double>(hidden_dim), M = static_cast<double>(mlp_dim);
  const double parameters = static_cast<double>(num_layers) * (4 * D * D + 2 * D * M + 9 * D + M) +
                            static_cast<double>(patch_dim()) * D + (tokens + 3) * D +
                            static_cast<double>(num_classes) * (D + 1);
  DDPX_REQUIRE(parameters <= double(int64_t{1} << 36),
               "model '{}' would have {:.3g} parameters, beyond the supported {:.3g} (256 GiB in fp32); check "
               "layers, hidden and mlp", name, parameters, double(int64_t{1} << 36));
}

std::string VitConfig::spec() const {
  if (auto it = named_configs().find(name); it != named_configs().end() && it->second == *this) return name;
  return fmt::format("custom:image={},patch={},channels={},layers={},heads={},hidden={},mlp={},classes={}",
                     image_size, patch_size, channels, num_layers, num_heads, hidden_dim, mlp_dim, num_classes);
}

VitConfig parse_vit_spec(std::string_view spec, std::optional<int64_t> classes) {
  const auto [base, overrides] = split_model_spec(spec);
  VitConfig config;
  if (base == "custom") {
    DDPX_REQUIRE(!overrides.empty(), "model spec '{}': custom needs its shape, e.g. custom:image=32,patch=4,layers=2,"
                 "hidden=64,heads=4,mlp=128,classes=10 (keys not given are ViT-B/16's: image 224, patch 16, layers "
                 "12, hidden 768, heads 12, mlp 3072, classes 1000); for ViT-B/16 itself say vit_b_16", spec);
    config = make("custom", 224, 16, 12, 12, 768, 3072, 1000);
  } else if (auto it = named_configs().find(base); it != named_configs().end()) {
    config = it->second;
  } else {
    fail("unknown model '{}'; known models: {} (or custom:image=..,patch=..,layers=..,hidden=..,heads=..,"
         "mlp=..,classes=..)",
         base, fmt::join(vit_model_names(), ", "));
  }
  if (!overrides.empty()) config.name = std::string(spec);
  if (classes) config.num_classes = *classes;  // the run's count; a classes= below wins
  apply_spec_overrides(spec, overrides,
                       {{"image", &config.image_size}, {"patch", &config.patch_size}, {"channels", &config.channels},
                        {"layers", &config.num_layers}, {"heads", &config.num_heads}, {"hidden", &config.hidden_dim},
                        {"mlp", &config.mlp_dim}, {"classes", &config.num_classes}});
  config.validate();
  return config;
}

std::vector<std::string> vit_model_names() {
  std::vector<std::string> names;
  for (const auto& [name, _] : named_configs()) names.push_back(name);
  return names;
}

}  // namespace ddpx
