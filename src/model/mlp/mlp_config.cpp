// Named MLP shapes and the spec parser (see mlp_config.hpp for the guarantees).
#include "model/mlp/mlp_config.hpp"

#include <fmt/format.h>

#include <map>

#include "core/error.hpp"
#include "model/spec_overrides.hpp"

namespace ddpx {
namespace {

MlpConfig make(std::string name, int64_t image, int64_t layers, int64_t width, int64_t classes) {
  MlpConfig c;
  c.name = std::move(name);
  c.image_size = image;
  c.num_layers = layers;
  c.width = width;
  c.num_classes = classes;
  return c;
}

const std::map<std::string, MlpConfig, std::less<>>& named_configs() {
  static const std::map<std::string, MlpConfig, std::less<>> table = {
      {"mlp_tiny_test", make("mlp_tiny_test", 16, 2, 32, 10)},
      {"mlp_s", make("mlp_s", 32, 2, 1024, 10)},
      {"mlp_l", make("mlp_l", 224, 3, 2048, 1000)},
  };
  return table;
}


}  // namespace

void MlpConfig::validate() const {
  constexpr int64_t kMaxSize = int64_t{1} << 24;
  auto sized = [&](const char* field, int64_t v) {
    DDPX_REQUIRE(v > 0, "model '{}': {} must be positive, got {}", name, field, v);
    DDPX_REQUIRE(v <= kMaxSize, "model '{}': {} = {} is beyond the supported {}", name, field, v, kMaxSize);
  };
  sized("image", image_size);
  sized("channels", channels);
  sized("layers", num_layers);
  sized("width", width);
  sized("classes", num_classes);
  const double in = static_cast<double>(channels) * static_cast<double>(image_size) * static_cast<double>(image_size);
  DDPX_REQUIRE(in <= double(int64_t{1} << 31),
               "model '{}': {}x{}x{} images flatten to {:.3g} features, beyond the supported 2^31; use smaller "
               "images", name, image_size, image_size, channels, in);
  const double W = static_cast<double>(width);
  const double parameters = in * W + W + static_cast<double>(num_layers - 1) * (W * W + W) +
                            static_cast<double>(num_classes) * (W + 1);
  DDPX_REQUIRE(parameters <= double(int64_t{1} << 36),
               "model '{}' would have {:.3g} parameters, beyond the supported {:.3g} (256 GiB in fp32); check "
               "image, layers and width", name, parameters, double(int64_t{1} << 36));
}

std::string MlpConfig::spec() const {
  if (auto it = named_configs().find(name); it != named_configs().end() && it->second == *this) return name;
  return fmt::format("mlp:image={},channels={},layers={},width={},classes={}", image_size, channels, num_layers,
                     width, num_classes);
}

MlpConfig parse_mlp_spec(std::string_view spec, std::optional<int64_t> classes) {
  const auto [base, overrides] = split_model_spec(spec);
  MlpConfig config;
  if (base == "mlp") {
    config = named_configs().find("mlp_s")->second;
    config.name = "mlp";
  } else if (auto it = named_configs().find(base); it != named_configs().end()) {
    config = it->second;
  } else {
    fail("unknown MLP '{}'; known: {} (or mlp:image=..,channels=..,layers=..,width=..,classes=..)", base,
         fmt::join(mlp_model_names(), ", "));
  }
  if (!overrides.empty()) config.name = std::string(spec);
  if (classes) config.num_classes = *classes;  // the run's count; a classes= below wins
  apply_spec_overrides(spec, overrides,
                       {{"image", &config.image_size}, {"channels", &config.channels}, {"layers", &config.num_layers},
                        {"width", &config.width}, {"classes", &config.num_classes}});
  config.validate();
  return config;
}

std::vector<std::string> mlp_model_names() { return {"mlp_tiny_test", "mlp_s", "mlp_l"}; }

}  // namespace ddpx
