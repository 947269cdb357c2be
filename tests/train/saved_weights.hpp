// How the training tests compare runs: the weights a run saved (--save, .safetensors) read into the flat buffer of
// `model` (any registry spec: vit_tiny_test, the tests' usual model, mlp_tiny_test, mlp:...), and the largest
// elementwise difference of two such buffers (0 means bit for bit; max_abs_diff from support/numeric.hpp: NaN where
// either holds a NaN, +inf for different sizes, so neither passes a bound).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/param_safetensors.hpp"
#include "model/model_registry.hpp"
#include "support/numeric.hpp"

namespace ddpx::testing {

inline std::vector<float> saved_weights(const std::filesystem::path& path,
                                        const std::string& model = "vit_tiny_test") {
  const std::unique_ptr<Model> m = make_model(model);
  std::vector<float> params(m->layout().buffer_size());
  load_params_safetensors(path, m->layout(), params.data());
  return params;
}

}  // namespace ddpx::testing
