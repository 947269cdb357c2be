// The shared "base:key=value,..." reading of model specs (model/spec_overrides.hpp): split, overrides in order,
// empty items skipped, and refusals that name the spec, the item and the known keys.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "model/spec_overrides.hpp"
#include "model/vit/vit_config.hpp"

namespace ddpx {
namespace {

TEST(SpecOverrides, SplitsAtTheFirstColon) {
  EXPECT_EQ(split_model_spec("vit_l_32").base, "vit_l_32");
  EXPECT_EQ(split_model_spec("vit_l_32").overrides, "");
  EXPECT_EQ(split_model_spec("mlp:width=8,classes=3").base, "mlp");
  EXPECT_EQ(split_model_spec("mlp:width=8,classes=3").overrides, "width=8,classes=3");
}

TEST(SpecOverrides, SetsFieldsAndSkipsEmptyItems) {
  int64_t width = 1, classes = 2;
  apply_spec_overrides("mlp:width=8,,classes=3", "width=8,,classes=3", {{"width", &width}, {"classes", &classes}});
  EXPECT_EQ(width, 8);
  EXPECT_EQ(classes, 3);
}

// Issue 37 item 9: a key given twice took the last value, and `custom:` alone silently meant ViT-B/16.
TEST(SpecOverrides, AKeyGivenTwiceAndABareCustomAreRefused) {
  int64_t width = 1, classes = 2;
  try {
    apply_spec_overrides("mlp:width=8,classes=3,width=16", "width=8,classes=3,width=16",
                         {{"width", &width}, {"classes", &classes}});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "model spec 'mlp:width=8,classes=3,width=16': key 'width' is given twice; give "
                                     "each key once");
  }
  for (const char* spec : {"custom:image=16,image=32", "custom:", "custom"}) {
    try {
      parse_vit_spec(spec);
      ADD_FAILURE() << spec << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("model spec '") + spec + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_vit_spec("custom:image=32,patch=4,layers=2,hidden=64,heads=4,mlp=128,classes=10").image_size, 32);
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
