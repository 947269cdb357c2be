// --load W --reset-head: a ViT saved with 10 classes loads into one with 5 classes, every tensor but the head
// read, the head left as it was and listed with the reason; the MLP's head likewise; weights of another family are
// refused naming --reset-head.
#include <gtest/gtest.h>

#include <filesystem>

#include "error_expect.hpp"
#include "io/param_safetensors.hpp"
#include "model/classifier_head.hpp"
#include "model/model_registry.hpp"

namespace ddpx {
namespace {

TEST(ResetHead, LoadsEverythingButTheHeadAcrossClassCounts) {
  const auto path = std::filesystem::temp_directory_path() / "ddpx_test_reset_head.safetensors";
  for (const std::string base : {"vit_tiny_test", "mlp_tiny_test"}) {
    const auto pretrained = make_model(base);
    const auto finetune = make_model(base + ":classes=5");
    std::vector<float> saved(pretrained->layout().buffer_size());
    pretrained->init_params(saved.data(), 1);
    save_params_safetensors(path, pretrained->layout(), saved.data());
    const FlatLayout& layout = finetune->layout();
    std::vector<float> params(layout.buffer_size()), initial(layout.buffer_size());
    finetune->init_params(initial.data(), 7);
    params = initial;
    const std::vector<std::string> skipped = load_params_except_head(path, layout, params.data());
    ASSERT_EQ(skipped.size(), 2u) << base;
    EXPECT_NE(skipped[0].find("is not --model's"), std::string::npos) << skipped[0];
    size_t head_tensors = 0;
    for (const TensorSlot& slot : layout.tensors()) {
      const bool head = is_classifier_head(slot.name);
      head_tensors += head ? 1 : 0;
      const TensorSlot& source = pretrained->layout().at(slot.name);
      for (size_t i = 0; i < slot.numel; ++i) {
        const float expected = head ? initial[slot.offset + i] : saved[source.offset + i];
        ASSERT_EQ(params[slot.offset + i], expected) << base << " " << slot.name << "[" << i << "]";
      }
    }
    EXPECT_EQ(head_tensors, 2u);
  }
  const auto mlp = make_model("mlp_tiny_test");
  std::vector<float> mlp_params(mlp->layout().buffer_size());
  mlp->init_params(mlp_params.data(), 1);
  save_params_safetensors(path, mlp->layout(), mlp_params.data());
  const auto vit = make_model("vit_tiny_test:classes=5");
  std::vector<float> params(vit->layout().buffer_size());
  testing::expect_error([&] { load_params_except_head(path, vit->layout(), params.data()); },
                        {"--reset-head", "another model family", "saved for --model mlp_tiny_test"});
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ddpx
