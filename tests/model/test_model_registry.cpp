// The registry of model families: every name builds its model and keeps its name as its spec, specs round-trip,
// names are unique across families, an unknown name lists every family's names, and the families' Model
// implementations report their shapes consistently with their layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "error_expect.hpp"
#include "model/model_registry.hpp"

namespace ddpx {
namespace {

TEST(ModelRegistry, EveryNameBuildsItsModelAndKeepsItsName) {
  for (const std::string& name : known_model_names()) {
    const std::unique_ptr<Model> model = make_model(name);
    EXPECT_EQ(model->spec(), name);
    EXPECT_GT(model->num_classes(), 0) << name;
    EXPECT_GT(model->input_shape().numel(), 0) << name;
    EXPECT_FALSE(model->summary().empty()) << name;
  }
}

TEST(ModelRegistry, NamesAreUniqueAndEachFamilyAcceptsOnlyItsOwn) {
  std::set<std::string> seen;
  for (const ModelFamily& family : model_families())
    for (const std::string& name : family.variants) {
      EXPECT_TRUE(seen.insert(name).second) << name << " is registered twice";
      for (const ModelFamily& other : model_families())
        EXPECT_EQ(other.accepts(name), &other == &family) << name << " in " << other.name;
      EXPECT_EQ(make_model(name)->family(), family.name) << name;
    }
  EXPECT_EQ(model_families().size(), 2u);
}

TEST(ModelRegistry, CustomSpecsRoundTrip) {
  for (const char* spec : {"vit_tiny_test:classes=5", "custom:image=32,patch=8,layers=1,hidden=16,heads=2,mlp=32",
                           "mlp_s:width=64", "mlp:image=8,channels=1,layers=3,width=16,classes=4"}) {
    const std::unique_ptr<Model> model = make_model(spec);
    const std::unique_ptr<Model> again = make_model(model->spec());
    EXPECT_EQ(again->spec(), model->spec()) << spec;
    EXPECT_EQ(again->layout().buffer_size(), model->layout().buffer_size()) << spec;
    EXPECT_EQ(again->layout().tensors().size(), model->layout().tensors().size()) << spec;
  }
}

TEST(ModelRegistry, UnknownNameListsEveryFamily) {
  testing::expect_error([] { (void)make_model("resnet50:classes=3"); },
                        {"unknown model 'resnet50'", "vit_b_16", "custom:image=..", "mlp_s", "mlp:image=.."});
}

TEST(ModelRegistry, OnlyTorchvisionShapesHaveThePyTorchAnchor) {
  EXPECT_TRUE(has_pytorch_anchor("vit_l_32"));
  EXPECT_FALSE(has_pytorch_anchor("vit_tiny_test"));
  EXPECT_FALSE(has_pytorch_anchor("vit_l_32:classes=10"));
  EXPECT_FALSE(has_pytorch_anchor("mlp_s"));
}

// The trainer's family-independent properties (tests/train/test_family_properties*.cpp) run on every family's
// test_variant: a family without a small one would fail here instead of going untested.
TEST(ModelRegistry, EveryFamilyNamesASmallTestVariant) {
  for (const ModelFamily& family : model_families()) {
    ASSERT_FALSE(family.test_variant.empty()) << "family " << family.name << " names no test_variant";
    EXPECT_NE(std::find(family.variants.begin(), family.variants.end(), family.test_variant), family.variants.end())
        << family.test_variant << " is not a variant of " << family.name;
    const std::unique_ptr<Model> model = make_model(family.test_variant);
    EXPECT_EQ(model->family(), family.name) << family.test_variant;
    // Small: the properties train it dozens of times per CTest run.
    EXPECT_LE(model->layout().num_params(), 100'000u) << family.test_variant;
    EXPECT_LE(model->input_shape().numel(), 3 * 32 * 32) << family.test_variant;
  }
}

TEST(ModelRegistry, HelpTextNamesEveryVariant) {
  const std::string help = model_names_help();
  for (const std::string& name : known_model_names()) EXPECT_NE(help.find(name), std::string::npos) << name;
}

// Forward FLOPs (MFU's numerator): 2 x torchvision's published multiply-adds for its ViTs (17.564 G vit_b_16,
// 15.378 G vit_l_32, 4.409 G vit_b_32), and the MLP's Linear layers (mlp_tiny_test: 768*32 + 32*32 + 32*10).
TEST(ModelRegistry, ForwardFlopsMatchTorchvisionsFigures) {
  const std::pair<const char*, double> torchvision_gmacs[] = {{"vit_b_16", 17.564}, {"vit_l_32", 15.378},
                                                              {"vit_b_32", 4.409}};
  for (const auto& [name, gmacs] : torchvision_gmacs)
    EXPECT_NEAR(make_model(name)->forward_flops_per_image() / 2e9, gmacs, 2e-3 * gmacs) << name;
  EXPECT_EQ(make_model("mlp_tiny_test")->forward_flops_per_image(), 2.0 * (768 * 32 + 32 * 32 + 32 * 10));
  for (const std::string& name : known_model_names()) EXPECT_GT(make_model(name)->forward_flops_per_image(), 0) << name;
}

// The class count a run decides (the data's, --load's file's) reaches every family as a typed value: taken where the
// spec names no classes=, a classes= the user typed wins, and the model's spec() spells the head it has.
TEST(ModelRegistry, AClassCountIsATypedValueTheSpecsClassesWins) {
  for (const ModelFamily& family : model_families()) {
    const std::unique_ptr<Model> seven = make_model(family.test_variant, 7);
    EXPECT_EQ(seven->num_classes(), 7) << family.name;
    EXPECT_EQ(make_model(seven->spec())->num_classes(), 7) << seven->spec();
    EXPECT_EQ(make_model(family.test_variant, make_model(family.test_variant)->num_classes())->spec(),
              family.test_variant) << "the variant's own count keeps its name";
  }
  EXPECT_EQ(make_model("mlp:image=4,channels=1,layers=1,width=8,classes=5", 3)->num_classes(), 5);
  testing::expect_error([] { (void)make_model_from_flag("--model", "mlp_tiny_test", 0); }, {"--model mlp_tiny_test"});
}

}  // namespace
}  // namespace ddpx
