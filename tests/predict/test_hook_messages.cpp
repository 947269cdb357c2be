// predict's copies of two rules held against the originals and against hand-computed cases: the bucket cut
// (cut_buckets vs ddp/bucket_plan's BucketPlan) and PowerSGD's factor sizes (powersgd_sizes vs ddp's
// plan_compression), on every torchvision ViT shape's real gradient layout; and each hook's wire messages.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "ddp/bucket_plan.hpp"
#include "ddp/bucket_view.hpp"
#include "ddp/powersgd_layout.hpp"
#include "model/vit/vit_layout.hpp"
#include "predict/hook_messages.hpp"

namespace ddpx::predict {
namespace {

std::vector<GradientTensorInfo> tensors_of(const VitLayout& layout) {
  std::vector<GradientTensorInfo> out;
  for (const TensorSlot& s : layout.tensors())
    out.push_back({s.name, s.shape, static_cast<int64_t>(s.offset), static_cast<int64_t>(s.numel)});
  return out;
}

std::vector<GradTensor> grad_tensors_of(const VitLayout& layout) {
  std::vector<GradTensor> out;
  for (const TensorSlot& s : layout.tensors()) out.push_back({s.name, s.offset, s.numel, s.shape});
  return out;
}

TEST(HookMessages, BucketCutsAndPowerSgdSizesMatchDdpOnRealLayouts) {
  for (const char* model : {"vit_tiny_test", "vit_b_32", "vit_l_32"}) {
    const VitLayout layout(parse_vit_spec(model));
    const std::vector<GradientTensorInfo> tensors = tensors_of(layout);
    for (double cap_mb : {0.5, 1.0, 25.0, 100.0, 2000.0}) {
      SCOPED_TRACE(std::string(model) + " cap " + std::to_string(cap_mb));
      BucketPlanOptions options;
      options.cap_bytes = static_cast<size_t>(cap_mb * 1024 * 1024);
      options.first_bucket_cap_bytes = size_t{1} << 20;
      const BucketPlan plan(grad_tensors_of(layout), options);
      const std::vector<TensorRange> cut = cut_buckets(tensors, cap_mb, 1.0);
      ASSERT_EQ(cut.size(), plan.size());
      for (size_t b = 0; b < cut.size(); ++b) {
        EXPECT_EQ(cut[b].first, plan[b].first_tensor);
        EXPECT_EQ(cut[b].end, plan[b].end_tensor);
        EXPECT_EQ(bucket_elements(tensors, cut, b), static_cast<int64_t>(plan[b].numel()));
        for (int64_t rank : {1, 4}) {
          BucketView view;
          view.begin = plan[b].begin;
          view.end = plan[b].end;
          view.tensors = std::span<const GradTensor>(plan.tensors().data() + plan[b].first_tensor,
                                                      plan[b].end_tensor - plan[b].first_tensor);
          const CompressionLayout ddp = plan_compression(view, rank, 2.0);
          const PowerSgdSizes ours = powersgd_sizes(tensors, cut[b], rank);
          EXPECT_EQ(ours.p_elements, static_cast<int64_t>(ddp.p_elements));
          EXPECT_EQ(ours.q_elements, static_cast<int64_t>(ddp.q_elements));
          EXPECT_EQ(ours.uncompressed_elements, static_cast<int64_t>(ddp.uncompressed_elements));
          EXPECT_EQ(ours.matrices, static_cast<int64_t>(ddp.matrices.size()));
        }
      }
    }
  }
}

TEST(HookMessages, HandComputedSizesPerHook) {
  // A [1000, 64] weight and its [1000] bias; a [4, 4] matrix too small to gain ((4+4)*1*2 = 16, not < 16).
  const std::vector<GradientTensorInfo> tensors{{"w", {1000, 64}, 0, 64000},
                                                {"b", {1000}, 64000, 1000},
                                                {"small", {4, 4}, 65024, 16}};
  const TensorRange all{0, 3};
  const int64_t elements = 65024 + 16;
  EXPECT_EQ(hook_messages({HookKind::allreduce, 0}, tensors, all, elements), std::vector<int64_t>{elements * 4});
  EXPECT_EQ(hook_messages({HookKind::bf16, 0}, tensors, all, elements), std::vector<int64_t>{elements * 2});
  EXPECT_EQ(hook_messages({HookKind::fp16, 0}, tensors, all, elements), std::vector<int64_t>{elements * 2});
  // powersgd:1: P = 1000 x 1 and Q = 64 x 1 for w; b and small go uncompressed with P.
  EXPECT_EQ(hook_messages({HookKind::powersgd, 1}, tensors, all, elements),
            (std::vector<int64_t>{(1000 + 16 + 1000) * 4, 64 * 4}));
  // powersgd:4: P = 1000 x 4, Q = 64 x 4.
  EXPECT_EQ(hook_messages({HookKind::powersgd, 4}, tensors, all, elements),
            (std::vector<int64_t>{(1000 + 16 + 4000) * 4, 256 * 4}));
  // A bucket where nothing compresses makes one call.
  EXPECT_EQ(hook_messages({HookKind::powersgd, 1}, tensors, TensorRange{1, 3}, 1040),
            std::vector<int64_t>{1016 * 4});
}

TEST(HookMessages, HookNamesParseAsTrainSpellsThem) {
  EXPECT_EQ(parse_hook_spec("powersgd:4", "--hooks"), (HookSpec{HookKind::powersgd, 4}));
  EXPECT_EQ(parse_hook_spec("bf16", "--hooks").name(), "bf16");
  // Run reports record PowerSGD's start too (powersgd:R:S, ddp/comm_hook_factory.hpp); the model drops it.
  EXPECT_EQ(parse_hook_spec("powersgd:4:2", "config.hook"), (HookSpec{HookKind::powersgd, 4}));
  EXPECT_EQ(parse_hook_spec("powersgd:4:2", "config.hook").name(), "powersgd:4");
  for (const char* bad : {"powersgd", "powersgd:0", "powersgd:x", "powersgd:4:", "powersgd:4:x", "powersgd:4:-1",
                          "bf8", ""}) {
    try {
      (void)parse_hook_spec(bad, "--hooks");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--hooks"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ddpx::predict
