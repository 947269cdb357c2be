// tests/fixtures/tv_recipe_torch.json (tools/make_tv_recipe_fixtures.py): PyTorch's values for the parts of
// torchvision's classification recipe (its schedulers stepped as train.py steps them, torch.randperm and the
// repeated-augmentation sampler, the EMA's cadence), read once per test binary.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace ddpx::testing {

inline const nlohmann::json& tv_recipe_fixture() {
  static const nlohmann::json fixture = [] {
    const std::string path = std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/tv_recipe_torch.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("missing fixture " + path + " (tools/make_tv_recipe_fixtures.py writes it)");
    return nlohmann::json::parse(in);
  }();
  return fixture;
}

}  // namespace ddpx::testing
