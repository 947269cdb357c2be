// The hook catalogue as data: the --comm-hook parser (one canonical spelling, errors that name the flag), each
// row's facts (lossy, reads its buckets, the wire shape predict keys on) and the wire messages per bucket, by hand
// and against PowerSGD's layout on every torchvision ViT shape's real gradient layout. That the built hooks agree
// with their rows (name, reads_bucket, wire_bytes) is tests/ddp/test_hooks.cpp's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm_plan/bucket_plan.hpp"
#include "comm_plan/hook_catalogue.hpp"
#include "comm_plan/powersgd_layout.hpp"
#include "core/error.hpp"
#include "error_expect.hpp"
#include "model/vit/vit_layout.hpp"

namespace ddpx {
namespace {

// One canonical spec: both spellings of PowerSGD's start (powersgd:R:START and --powersgd-start, the default for
// powersgd:R) give the same spec, whose text parses back to itself.
TEST(HookCatalogue, OneCanonicalSpellingOfPowerSgdsStart) {
  const CommHookSpec explicit_start = parse_comm_hook_spec("powersgd:4:7");
  EXPECT_EQ(explicit_start.name, "powersgd");
  EXPECT_EQ(explicit_start.args, (std::vector<int64_t>{4, 7}));
  EXPECT_EQ(parse_comm_hook_spec("powersgd:4", /*default_powersgd_start=*/7), explicit_start);
  EXPECT_EQ(parse_comm_hook_spec("powersgd:4:7", /*default_powersgd_start=*/3), explicit_start);  // explicit wins
  EXPECT_EQ(parse_comm_hook_spec("powersgd:4").args.at(1), 2);
  EXPECT_EQ(explicit_start.text(), "powersgd:4:7");
  for (const char* text : {"allreduce", "fp16", "bf16", "powersgd:1:0", "powersgd:16:100"}) {
    const CommHookSpec spec = parse_comm_hook_spec(text);
    EXPECT_EQ(spec.text(), text);
    EXPECT_EQ(parse_comm_hook_spec(spec.text()), spec);
  }
}

TEST(HookCatalogue, ErrorsNameTheFlagAndEveryChoice) {
  for (const char* bad : {"powersgd", "powersgd:", "powersgd:0", "powersgd:x", "powersgd:2:y", "powersgd:4:",
                          "powersgd:4:-1", "fp8", "", "bf16:2", "allreduce:"}) {
    testing::expect_error([&] { (void)parse_comm_hook_spec(bad); }, {"--comm-hook"});
    testing::expect_error([&] { (void)parse_comm_hook_spec(bad, {}, "--hooks"); }, {"--hooks"});
  }
  EXPECT_EQ(comm_hook_syntaxes(), "allreduce | fp16 | bf16 | powersgd:R[:START]");
  testing::expect_error([] { (void)parse_comm_hook_spec("fp8"); },
                        {"'fp8' is not a hook", "allreduce, fp16, bf16, powersgd:R[:START]"});
}

// The rows' facts: only PowerSGD is lossy, every hook but allreduce compresses; only the allreduce hook at one rank
// leaves its buckets unread; predict tells PowerSGD's by R alone (START says from when, not what crosses the wire).
TEST(HookCatalogue, EachRowSaysWhatItIs) {
  ASSERT_EQ(comm_hooks().size(), 4u);
  for (const CommHookEntry& entry : comm_hooks()) {
    EXPECT_FALSE(entry.help.empty()) << entry.name;
    EXPECT_EQ(find_comm_hook(entry.name), &entry);
  }
  EXPECT_EQ(find_comm_hook("powersgd:4:2")->kind, HookKind::powersgd);
  EXPECT_EQ(find_comm_hook("fp8"), nullptr);
  EXPECT_EQ(find_comm_hook(""), nullptr);
  for (const char* text : {"allreduce", "fp16", "bf16"}) EXPECT_FALSE(comm_hook_is_lossy(parse_comm_hook_spec(text)));
  EXPECT_TRUE(comm_hook_is_lossy(parse_comm_hook_spec("powersgd:1")));
  EXPECT_FALSE(comm_hook_compresses(parse_comm_hook_spec("allreduce")));
  for (const char* text : {"fp16", "bf16", "powersgd:1"}) EXPECT_TRUE(comm_hook_compresses(parse_comm_hook_spec(text)));
  EXPECT_FALSE(comm_hook_reads_bucket(parse_comm_hook_spec("allreduce"), 1));
  EXPECT_TRUE(comm_hook_reads_bucket(parse_comm_hook_spec("allreduce"), 2));
  for (const char* text : {"fp16", "bf16", "powersgd:2"}) {
    EXPECT_TRUE(comm_hook_reads_bucket(parse_comm_hook_spec(text), 1)) << text;
    EXPECT_TRUE(comm_hook_reads_bucket(parse_comm_hook_spec(text), 8)) << text;
  }
  EXPECT_EQ(wire_shape(parse_comm_hook_spec("powersgd:4:2")).text(), "powersgd:4");
  EXPECT_EQ(wire_shape(parse_comm_hook_spec("powersgd:4:9")), wire_shape(parse_comm_hook_spec("powersgd:4")));
  EXPECT_NE(wire_shape(parse_comm_hook_spec("powersgd:4")), wire_shape(parse_comm_hook_spec("powersgd:2")));
  EXPECT_EQ(wire_shape(parse_comm_hook_spec("bf16")).text(), "bf16");
}

TEST(HookCatalogue, HandComputedWireMessagesPerHook) {
  // A [1000, 64] weight and its [1000] bias; a [4, 4] matrix too small to gain ((4+4)*1*2 = 16, not < 16); the
  // bias starts 0 elements after the weight, the small matrix 24 after the bias (padding travels with the bucket).
  const BucketPlan one_bucket({{"w", 0, 64000, {1000, 64}}, {"b", 64000, 1000, {1000}}, {"small", 65024, 16, {4, 4}}},
                              BucketPlanOptions{size_t{1} << 30, size_t{1} << 30, 4});
  ASSERT_EQ(one_bucket.size(), 1u);
  const int64_t elements = 65024 + 16;
  auto messages = [&](const char* hook) { return comm_hook_wire_messages(parse_comm_hook_spec(hook), one_bucket, 0); };
  EXPECT_EQ(messages("allreduce"), std::vector<int64_t>{elements * 4});
  EXPECT_EQ(messages("bf16"), std::vector<int64_t>{elements * 2});
  EXPECT_EQ(messages("fp16"), std::vector<int64_t>{elements * 2});
  // powersgd:1: P = 1000 x 1 and Q = 64 x 1 for w; b and small go uncompressed with P.
  EXPECT_EQ(messages("powersgd:1"), (std::vector<int64_t>{(1000 + 16 + 1000) * 4, 64 * 4}));
  // powersgd:4: P = 1000 x 4, Q = 64 x 4.
  EXPECT_EQ(messages("powersgd:4"), (std::vector<int64_t>{(1000 + 16 + 4000) * 4, 256 * 4}));
  // A bucket where nothing compresses makes one call.
  const BucketPlan vectors({{"b", 64000, 1000, {1000}}, {"small", 65024, 16, {4, 4}}},
                           BucketPlanOptions{size_t{1} << 30, size_t{1} << 30, 4});
  EXPECT_EQ(comm_hook_wire_messages(parse_comm_hook_spec("powersgd:1"), vectors, 0), std::vector<int64_t>{1016 * 4});
}

std::vector<GradTensor> grad_tensors_of(const VitLayout& layout) {
  std::vector<GradTensor> out;
  for (const TensorSlot& s : layout.tensors()) out.push_back({s.name, s.offset, s.numel, s.shape});
  return out;
}

// On real layouts and caps, PowerSGD's messages are its layout's P, Q and uncompressed sizes, and the plain hooks'
// are the bucket's span, padding included.
TEST(HookCatalogue, WireMessagesFollowTheLayoutOnRealModels) {
  for (const char* model : {"vit_tiny_test", "vit_b_32", "vit_l_32"}) {
    const VitLayout layout(parse_vit_spec(model));
    for (double cap_mb : {0.5, 1.0, 25.0, 2000.0}) {
      SCOPED_TRACE(std::string(model) + " cap " + std::to_string(cap_mb));
      const BucketPlan plan(grad_tensors_of(layout),
                            BucketPlanOptions{static_cast<size_t>(cap_mb * 1024 * 1024), size_t{1} << 20, 4});
      for (size_t b = 0; b < plan.size(); ++b) {
        EXPECT_EQ(comm_hook_wire_messages(parse_comm_hook_spec("allreduce"), plan, b),
                  std::vector<int64_t>{static_cast<int64_t>(plan[b].numel()) * 4});
        for (int64_t rank : {1, 4}) {
          const CompressionLayout c = plan_compression(plan, b, rank, kPowerSgdMinCompressionRate);
          const std::vector<int64_t> got =
              comm_hook_wire_messages(parse_comm_hook_spec("powersgd:" + std::to_string(rank)), plan, b);
          const auto bytes = [](size_t elements) { return static_cast<int64_t>(elements) * 4; };
          if (c.matrices.empty())
            EXPECT_EQ(got, std::vector<int64_t>{bytes(c.uncompressed_elements)});
          else
            EXPECT_EQ(got, (std::vector<int64_t>{bytes(c.uncompressed_elements + c.p_elements), bytes(c.q_elements)}));
        }
      }
    }
  }
}

}  // namespace
}  // namespace ddpx
