// The shared "base:key=value,..." reading of model specs (model/spec_overrides.hpp): split, overrides in order,
// empty items skipped, and refusals that name the spec, the item and the known keys.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "model/spec_overrides.hpp"

namespace ddpx {
namespace {

TEST(SpecOverrides, SplitsAtTheFirstColon) {
  EXPECT_EQ(split_model_spec("vit_l_32").base, "vit_l_32");
  EXPECT_EQ(split_model_spec("vit_l_32").overrides, "");
  EXPECT_EQ(split_model_spec("mlp:width=8,classes=3").base, "mlp");
  EXPECT_EQ(split_model_spec("mlp:width=8,classes=3").overrides, "width=8,classes=3");
}

TEST(SpecOverrides, SetsFieldsInOrderAndSkipsEmptyItems) {
  int64_t width = 1, classes = 2;
  apply_spec_overrides("mlp:width=8,,classes=3,width=16", "width=8,,classes=3,width=16",
                       {{"width", &width}, {"classes", &classes}});
  EXPECT_EQ(width, 16);
  EXPECT_EQ(classes, 3);
}

TEST(SpecOverrides, RefusalsNameTheSpecTheItemAndTheKeys) {
  int64_t width = 1;
  auto message = [&](const char* overrides) {
    try {
      apply_spec_overrides(std::string("mlp:") + overrides, overrides, {{"width", &width}, {"classes", &width}});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("width"), "model spec 'mlp:width': 'width' is not key=value");
  EXPECT_EQ(message("width=8x"), "model spec 'mlp:width=8x': 'width=8x' is not an integer");
  EXPECT_EQ(message("depth=2"), "model spec 'mlp:depth=2': unknown key 'depth' (width, classes)");
  EXPECT_EQ(width, 1);
}

}  // namespace
}  // namespace ddpx
