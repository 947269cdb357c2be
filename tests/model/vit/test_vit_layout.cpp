// Parameter counts of every torchvision shape and the backward-order layout guarantees.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "model/vit/vit_layout.hpp"

namespace ddpx {
namespace {

TEST(VitLayout, TorchvisionParameterCounts) {
  // Counts from torchvision.models.vit_*(): sum(p.numel() for p in model.parameters()).
  EXPECT_EQ(VitLayout(parse_vit_spec("vit_b_16")).num_params(), 86567656u);
  EXPECT_EQ(VitLayout(parse_vit_spec("vit_b_32")).num_params(), 88224232u);
  EXPECT_EQ(VitLayout(parse_vit_spec("vit_l_16")).num_params(), 304326632u);
  EXPECT_EQ(VitLayout(parse_vit_spec("vit_l_32")).num_params(), 306535400u);
  EXPECT_EQ(VitLayout(parse_vit_spec("vit_h_14")).num_params(), 632045800u);
}

TEST(VitLayout, BackwardOrderAlignedAndDisjoint) {
  VitLayout layout(parse_vit_spec("vit_tiny_test"));
  const auto& t = layout.tensors();
  EXPECT_EQ(t.front().name, "heads.head.weight");
  EXPECT_EQ(t.back().name, "conv_proj.bias");
  size_t end = 0;
  for (const auto& slot : t) {
    EXPECT_EQ(slot.offset % VitLayout::kAlignElements, 0u) << slot.name;
    EXPECT_GE(slot.offset, end) << slot.name;
    end = slot.offset + slot.numel;
  }
  EXPECT_LE(end, layout.buffer_size());
  EXPECT_EQ(layout.buffer_size() % VitLayout::kAlignElements, 0u);
  // Block spans shrink toward the front as the layer index grows (last block is first in the buffer).
  EXPECT_LT(layout.blocks[1].begin, layout.blocks[0].begin);
  EXPECT_EQ(layout.blocks[1].begin, layout.head_end + (layout.blocks[1].begin - layout.head_end));
  EXPECT_LE(layout.blocks[0].end, layout.embedding_begin);
  EXPECT_EQ(layout.at("encoder.layers.encoder_layer_1.self_attention.in_proj_weight").shape,
            (std::vector<int64_t>{96, 32}));
  EXPECT_EQ(layout.at("encoder.pos_embedding").shape, (std::vector<int64_t>{1, 17, 32}));
}

TEST(VitConfig, RejectsBadShapesNamingTheValue) {
  try {
    parse_vit_spec("custom:image=30,patch=8,layers=1,hidden=16,heads=2,mlp=8,classes=3");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("image size 30 is not divisible by patch size 8"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_vit_spec("vit_b_16:heads=5"), Error);
  EXPECT_THROW(parse_vit_spec("vit_b_16:layers=0"), Error);
  EXPECT_THROW(parse_vit_spec("vit_q_99"), Error);
  EXPECT_THROW(parse_vit_spec("custom:bogus=3"), Error);
  EXPECT_EQ(parse_vit_spec("vit_l_32:classes=10").num_classes, 10);
}

}  // namespace
}  // namespace ddpx
