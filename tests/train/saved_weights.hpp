// How the training tests compare runs: the weights a run saved (--save, .safetensors) read into the flat buffer of
// `model` (any registry spec: vit_tiny_test, the tests' usual model, mlp_tiny_test, mlp:...), and the largest
// elementwise difference of two such buffers (0 means bit for bit).
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

namespace ddpx::testing {

inline std::vector<float> saved_weights(const std::filesystem::path& path,
                                        const std::string& model = "vit_tiny_test") {
  const std::unique_ptr<Model> m = make_model(model);
  std::vector<float> params(m->layout().buffer_size());
  load_params_safetensors(path, m->layout(), params.data());
  return params;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(double(a[i]) - b[i]));
  return worst;
}

}  // namespace ddpx::testing
