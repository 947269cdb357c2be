// The generic flat layout's guarantees, on every registered model family: aligned, disjoint tensors inside one
// ready span each; spans in buffer order from 0 to buffer_size(), on 4-element bounds (mlp_tiny_test's head ends
// at 10 classes); lookup by name with an error naming the model.
// And the ViT's spans are exactly the ones its typed offsets describe (head_end, blocks, embedding_begin).
#include <gtest/gtest.h>

#include "error_expect.hpp"
#include "model/model_registry.hpp"
#include "model/vit/vit_layout.hpp"

namespace ddpx {
namespace {

void expect_layout_guarantees(const FlatLayout& layout) {
  SCOPED_TRACE(layout.spec());
  const std::vector<BufferSpan>& spans = layout.ready_spans();
  ASSERT_FALSE(spans.empty());
  EXPECT_EQ(spans.front().begin, 0u);
  EXPECT_EQ(spans.back().end, layout.buffer_size());
  EXPECT_EQ(layout.buffer_size() % FlatLayout::kAlignElements, 0u);
  for (size_t i = 0; i < spans.size(); ++i) {
    EXPECT_LT(spans[i].begin, spans[i].end) << "span " << i;
    EXPECT_EQ(spans[i].begin % FlatLayout::kSpanGranule, 0u) << "span " << i;
    EXPECT_EQ(spans[i].end % FlatLayout::kSpanGranule, 0u) << "span " << i;
    if (i > 0) EXPECT_LE(spans[i - 1].end, spans[i].begin) << "span " << i;
  }
  size_t end = 0, params = 0;
  for (const TensorSlot& slot : layout.tensors()) {
    EXPECT_EQ(slot.offset % FlatLayout::kAlignElements, 0u) << slot.name;
    EXPECT_GE(slot.offset, end) << slot.name;
    end = slot.offset + slot.numel;
    params += slot.numel;
    int inside = 0;
    for (const BufferSpan& s : spans) inside += slot.offset >= s.begin && end <= s.end;
    EXPECT_EQ(inside, 1) << slot.name << " must lie in exactly one ready span";
    EXPECT_EQ(layout.find(slot.name), &slot);
  }
  EXPECT_EQ(params, layout.num_params());
  EXPECT_LE(end, layout.buffer_size());
}

TEST(FlatLayout, EveryRegisteredModelKeepsTheGuarantees) {
  for (const std::string& name : known_model_names()) {
    if (name == "vit_h_14" || name == "mlp_l") continue;  // the same code at a size that only costs time here
    expect_layout_guarantees(make_model(name)->layout());
  }
}

TEST(FlatLayout, LookupOfAMissingTensorNamesTheModel) {
  const std::unique_ptr<Model> model = make_model("mlp_tiny_test");
  EXPECT_EQ(model->layout().find("nothing.weight"), nullptr);
  testing::expect_error([&] { (void)model->layout().at("nothing.weight"); },
                        {"model 'mlp_tiny_test' has no tensor named 'nothing.weight'"});
}

TEST(FlatLayout, VitSpansAreTheStagesOfItsBackwardPass) {
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  std::vector<BufferSpan> expected = {{0, layout.head_end}};
  for (size_t i = layout.blocks.size(); i-- > 0;) expected.push_back({layout.blocks[i].begin, layout.blocks[i].end});
  expected.push_back({layout.embedding_begin, layout.buffer_size()});
  EXPECT_EQ(layout.ready_spans(), expected);
  EXPECT_EQ(layout.spec(), "vit_tiny_test");
}

}  // namespace
}  // namespace ddpx
