// tests/fixtures/recipe_torch.json (tools/make_recipe_fixtures.py): PyTorch's reference values for the training
// recipe's pieces, read once per test binary; read_json_fixture(), the one reader of such a fixture file.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddpx::testing {

// tests/fixtures/FILE parsed; a missing file is an error naming it and `script`, the tool that writes it.
inline nlohmann::json read_json_fixture(const std::string& file, const std::string& script) {
  const std::string path = std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing fixture " + path + " (" + script + " writes it)");
  return nlohmann::json::parse(in);
}

inline const nlohmann::json& recipe_fixture() {
  static const nlohmann::json fixture = read_json_fixture("recipe_torch.json", "tools/make_recipe_fixtures.py");
  return fixture;
}

template <typename T>
std::vector<T> as_vector(const nlohmann::json& values) {
  return values.get<std::vector<T>>();
}

}  // namespace ddpx::testing
