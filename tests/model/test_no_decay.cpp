// --no-decay's exemptions: which tensors of a ViT and an MLP are exempt (rank <= 1, position embedding, class token)
// and the run splitting the optimizer updates by.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/model_registry.hpp"
#include "model/no_decay.hpp"

namespace ddpx {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(NoDecay, ExemptsBiasesNormsPositionEmbeddingAndClassToken) {
  const auto vit = make_model("vit_tiny_test");
  const std::vector<std::string> names = no_decay_names(vit->layout());
  for (const char* exempt : {"class_token", "encoder.pos_embedding", "conv_proj.bias", "encoder.ln.weight",
                             "encoder.layers.encoder_layer_0.ln_1.weight",
                             "encoder.layers.encoder_layer_1.self_attention.in_proj_bias", "heads.head.bias"})
    EXPECT_TRUE(contains(names, exempt)) << exempt;
  for (const char* decayed : {"conv_proj.weight", "heads.head.weight",
                              "encoder.layers.encoder_layer_0.self_attention.in_proj_weight"})
    EXPECT_FALSE(contains(names, decayed)) << decayed;
  const auto mlp = make_model("mlp_tiny_test");
  EXPECT_EQ(no_decay_names(mlp->layout()),
            (std::vector<std::string>{"head.bias", "hidden.1.bias", "hidden.0.bias"}))
      << "(in the MLP's backward order)";
}

TEST(NoDecay, RunsCoverTheRangeInOrder) {
  const std::vector<BufferSpan> exempt = {{10, 20}, {30, 34}, {40, 50}};
  std::vector<std::tuple<size_t, size_t, bool>> runs;
  for_each_decay_run(15, 45, exempt, [&](size_t b, size_t e, bool decay) { runs.emplace_back(b, e, decay); });
  EXPECT_EQ(runs, (std::vector<std::tuple<size_t, size_t, bool>>{
                      {15, 20, false}, {20, 30, true}, {30, 34, false}, {34, 40, true}, {40, 45, false}}));
  runs.clear();
  for_each_decay_run(0, 8, exempt, [&](size_t b, size_t e, bool decay) { runs.emplace_back(b, e, decay); });
  EXPECT_EQ(runs, (std::vector<std::tuple<size_t, size_t, bool>>{{0, 8, true}}));
  runs.clear();
  for_each_decay_run(20, 30, exempt, [&](size_t b, size_t e, bool decay) { runs.emplace_back(b, e, decay); });
  EXPECT_EQ(runs, (std::vector<std::tuple<size_t, size_t, bool>>{{20, 30, true}}));
}

TEST(NoDecay, SpansWidenedToVectorsCoverTheExemptAndNoDecayedTensor) {
  EXPECT_EQ(widened_to_vectors({{10, 21}, {22, 25}, {40, 41}}, 4),
            (std::vector<BufferSpan>{{8, 28}, {40, 44}}));
  for (const char* spec : {"vit_tiny_test", "mlp_tiny_test", "mlp:image=28,channels=1,layers=2,width=6,classes=10"}) {
    SCOPED_TRACE(spec);
    const auto model = make_model(spec);
    const FlatLayout& layout = model->layout();
    const std::vector<BufferSpan> widened = widened_to_vectors(no_decay_spans(layout), 4);
    for (const BufferSpan& span : widened) EXPECT_TRUE(span.begin % 4 == 0 && span.end % 4 == 0);
    auto covered = [&](size_t at) {
      return std::any_of(widened.begin(), widened.end(), [&](const BufferSpan& s) { return s.begin <= at && at < s.end; });
    };
    for (const TensorSlot& tensor : layout.tensors()) {
      const bool exempt = exempt_from_decay(tensor);
      for (size_t at = tensor.offset; at < tensor.offset + tensor.numel; ++at)
        ASSERT_EQ(covered(at), exempt) << tensor.name << " element " << at - tensor.offset;
    }
  }
}

}  // namespace
}  // namespace ddpx
