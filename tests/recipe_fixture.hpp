// tests/fixtures/recipe_torch.json (tools/make_recipe_fixtures.py): PyTorch's reference values for the training
// recipe's pieces, read once per test binary.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddpx::testing {

inline const nlohmann::json& recipe_fixture() {
  static const nlohmann::json fixture = [] {
    const std::string path = std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/recipe_torch.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("missing fixture " + path + " (tools/make_recipe_fixtures.py writes it)");
    return nlohmann::json::parse(in);
  }();
  return fixture;
}

template <typename T>
std::vector<T> as_vector(const nlohmann::json& values) {
  return values.get<std::vector<T>>();
}

}  // namespace ddpx::testing
