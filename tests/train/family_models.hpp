// The models the trainer's family-independent properties run on (test_family_properties*.cpp): each registered
// family's test_variant, in registry order, read from the registry so that a new family is covered by adding its
// row (tests/model/test_model_registry.cpp fails a family without a small test_variant). family_test_name() turns
// a parameter into a GoogleTest name ("vit_tiny_test", "mlp_tiny_test_adamw").
#pragma once
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "model/model_registry.hpp"

namespace ddpx::testing {

inline std::vector<std::string> family_test_models() {
  std::vector<std::string> models;
  for (const ModelFamily& family : model_families()) models.push_back(family.test_variant);
  return models;
}

// Letters, digits and '_' only (GoogleTest's rule for parameter names); anything else becomes '_'.
inline std::string test_name_part(const std::string& text) {
  std::string name = text;
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
  return name;
}

struct FamilyTestName {
  std::string operator()(const ::testing::TestParamInfo<std::string>& info) const { return test_name_part(info.param); }
};

}  // namespace ddpx::testing
