// Builds the MLP's backward-ordered flat layout (see mlp_layout.hpp for the guarantees).
#include "model/mlp/mlp_layout.hpp"

#include <fmt/format.h>

namespace ddpx {
namespace {
const MlpConfig& validated(const MlpConfig& config) {
  config.validate();
  return config;
}
}  // namespace

MlpLayout::MlpLayout(const MlpConfig& config) : FlatLayout(validated(config).spec()), config_(config) {
  auto linear = [&](const std::string& name, int64_t in, int64_t out) {
    LinearOffsets o;
    o.in = in, o.out = out;
    o.weight = add(name + ".weight", {out, in});
    o.bias = add(name + ".bias", {out});
    close_span();
    return o;
  };
  head = linear("head", config.width, config.num_classes);
  hidden.resize(static_cast<size_t>(config.num_layers));
  for (int64_t l = config.num_layers - 1; l >= 0; --l)
    hidden[static_cast<size_t>(l)] = linear(fmt::format("hidden.{}", l), config.layer_in(l), config.width);
  finish();
}

}  // namespace ddpx
