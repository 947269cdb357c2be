// tests/fixtures/tv_recipe_torch.json (tools/make_tv_recipe_fixtures.py): PyTorch's values for the parts of
// torchvision's classification recipe (its schedulers stepped as train.py steps them, torch.randperm and the
// repeated-augmentation sampler, the EMA's cadence), read once per test binary.
#pragma once
#include <nlohmann/json.hpp>

#include "recipe_fixture.hpp"

namespace ddpx::testing {

inline const nlohmann::json& tv_recipe_fixture() {
  static const nlohmann::json fixture =
      read_json_fixture("tv_recipe_torch.json", "tools/make_tv_recipe_fixtures.py");
  return fixture;
}

}  // namespace ddpx::testing
