// Communication hooks on one process: the --comm-hook parser and factory, each built hook against its catalogue
// row (reads_bucket, wire_bytes), CastHook's
// rounding, PowerSGD's compression rules, its exact recovery of rank-R matrices, and the uncompressed path for 1-D
// tensors and early steps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/error.hpp"
#include "core/half_precision.hpp"
#include "core/rng.hpp"
#include "ddp/cast_hook.hpp"
#include "ddp/comm_hook_factory.hpp"
#include "ddp/powersgd_hook.hpp"
#include "dist/self_communicator.hpp"
#include "toy_regression.hpp"

namespace ddpx {
namespace {

using testing::ToyRegression;

BucketView whole_buffer_view(const ToyRegression& model, std::vector<float>& buffer) {
  const auto& t = model.tensors();
  return BucketView{0, buffer.data(), 0, t.back().offset + t.back().numel, t, GradDevice::cpu};
}

TEST(CommHookSpec, ParsesEveryBuiltIn) {
  EXPECT_EQ(make_comm_hook("allreduce")->name(), "allreduce");
  EXPECT_EQ(make_comm_hook("fp16")->name(), "fp16");
  EXPECT_EQ(make_comm_hook("bf16")->name(), "bf16");
  EXPECT_EQ(make_comm_hook("powersgd:4")->name(), "powersgd:4:2");
  EXPECT_EQ(make_comm_hook("powersgd:1:10")->name(), "powersgd:1:10");
  auto* powersgd = dynamic_cast<PowerSgdHook*>(make_comm_hook("powersgd:2:7").get());
  ASSERT_NE(powersgd, nullptr);
}

// Every canonical spec builds a hook whose name is that spec's text (the spec's parsing and canonical text are
// comm_plan's: HookCatalogue.OneCanonicalSpellingOfPowerSgdsStart).
TEST(CommHookSpec, EveryCanonicalSpecBuildsAHookNamedByItsText) {
  for (const char* text : {"allreduce", "fp16", "bf16", "powersgd:4:7", "powersgd:1:0", "powersgd:16:100"})
    EXPECT_EQ(make_comm_hook(parse_comm_hook_spec(text))->name(), text);
  EXPECT_EQ(make_comm_hook(parse_comm_hook_spec("powersgd:4", /*default_powersgd_start=*/7))->name(), "powersgd:4:7");
}

// The registry is the one list: every entry builds a hook whose name is its canonical text, and the error for an
// unknown hook lists every entry's syntax.
TEST(CommHookSpec, TheRegistryFeedsParsingBuildingAndTheError) {
  ASSERT_FALSE(comm_hooks().empty());
  for (const CommHookEntry& entry : comm_hooks()) {
    const std::string text = entry.name == "powersgd" ? "powersgd:2:3" : std::string(entry.name);
    EXPECT_EQ(make_comm_hook(text)->name(), text) << entry.name;
    EXPECT_FALSE(entry.help.empty()) << entry.name;
  }
  EXPECT_EQ(comm_hook_syntaxes(), "allreduce | fp16 | bf16 | powersgd:R[:START]");
  try {
    make_comm_hook("fp8");
    ADD_FAILURE() << "accepted fp8";
  } catch (const Error& e) {
    for (const CommHookEntry& entry : comm_hooks())
      EXPECT_NE(std::string(e.what()).find(entry.syntax), std::string::npos) << e.what();
  }
}

// Each built hook puts on the wire what its catalogue row says (the sum of comm_hook_wire_messages at a step where
// it does its full work), so ddpx predict prices what ddp runs.
TEST(CommHookSpec, EveryHookSendsWhatItsCatalogueRowSays) {
  ToyRegression model;
  std::vector<float> buffer(model.buffer_elems());
  const BucketView view = whole_buffer_view(model, buffer);
  const BucketPlan plan(model.tensors(), BucketPlanOptions{size_t{1} << 30, size_t{1} << 30, 4});
  ASSERT_EQ(plan.size(), 1u);
  ASSERT_EQ(plan[0].numel(), view.numel());
  for (const char* text : {"allreduce", "fp16", "bf16", "powersgd:1:0", "powersgd:2:0", "powersgd:4:0"}) {
    const CommHookSpec spec = parse_comm_hook_spec(text);
    int64_t sum = 0;
    for (int64_t bytes : comm_hook_wire_messages(spec, plan, 0)) sum += bytes;
    EXPECT_EQ(static_cast<int64_t>(make_comm_hook(spec)->wire_bytes(view, 5)), sum) << text;
  }
}

TEST(CommHookSpec, ErrorsNameTheFlag) {
  for (const char* bad : {"powersgd", "powersgd:", "powersgd:0", "powersgd:x", "powersgd:2:y", "fp8", "",
                          "bf16:2", "allreduce:"}) {
    try {
      make_comm_hook(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--comm-hook"), std::string::npos) << e.what();
    }
  }
}

// The catalogue's reads_bucket (comm_plan/hook_catalogue.hpp): the allreduce hook at one rank issues nothing, so a
// bucket of any bits (the bf16 weight
// gradients a plain run keeps in fp32 slots, NaN patterns included) comes back untouched; at two ranks, and for
// every other hook even at one, the buckets are read.
TEST(AllreduceHook, AtOneRankLeavesAnyBitsUntouchedAndSaysSo) {
  ToyRegression model;
  SelfCommunicator comm;
  std::vector<uint32_t> bits(model.buffer_elems());
  Rng rng(7);
  for (uint32_t& b : bits) b = static_cast<uint32_t>(rng.next_u64());
  bits[0] = 0x7fc00001u;  // a NaN payload
  std::vector<float> bucket(bits.size());
  std::memcpy(bucket.data(), bits.data(), bits.size() * sizeof(float));
  BucketView view = whole_buffer_view(model, bucket);
  std::unique_ptr<CommHook> hook = make_comm_hook("allreduce");
  EXPECT_FALSE(comm_hook_reads_bucket(parse_comm_hook_spec("allreduce"), 1));
  EXPECT_TRUE(comm_hook_reads_bucket(parse_comm_hook_spec("allreduce"), 2));
  hook->run(view, comm, nullptr, 0);
  EXPECT_EQ(std::memcmp(bucket.data(), bits.data(), bits.size() * sizeof(float)), 0);
  for (const char* other : {"bf16", "fp16", "powersgd:2"})
    EXPECT_TRUE(comm_hook_reads_bucket(parse_comm_hook_spec(other), 1)) << other;
}

TEST(CastHook, OneRankLeavesTheValuesRoundedToTheWireFormat) {
  ToyRegression model;
  SelfCommunicator comm;
  std::vector<float> buffer(model.buffer_elems());
  Rng rng(3);
  for (float& v : buffer) v = float(rng.normal() * 100);
  for (WireFormat format : {WireFormat::fp16, WireFormat::bf16}) {
    std::vector<float> bucket = buffer;
    BucketView view = whole_buffer_view(model, bucket);
    CastHook hook(format);
    hook.run(view, comm, nullptr, 0);
    for (size_t i = 0; i < view.numel(); ++i) {
      float expected = format == WireFormat::fp16 ? half_to_float(float_to_half(buffer[i]))
                                                  : bf16_to_float(float_to_bf16(buffer[i]));
      ASSERT_EQ(bucket[i], expected) << i;
    }
  }
}

TEST(PowerSgdLayout, CompressesMatricesThatGainAndPacksTheRest) {
  ToyRegression model;
  std::vector<float> buffer(model.buffer_elems());
  BucketView view = whole_buffer_view(model, buffer);
  // Rank 1: every weight [O, 12] gains ((O + 12) * 2 < 12 O for O >= 4); biases stay uncompressed.
  CompressionLayout rank1 = plan_compression(view, 1, 2.0);
  ASSERT_EQ(rank1.matrices.size(), 5u);
  EXPECT_EQ(rank1.uncompressed.size(), 5u);
  EXPECT_EQ(rank1.uncompressed_elements, 4u + 20 + 8 + 24 + 16);
  EXPECT_EQ(rank1.matrices[3].rows, 24);  // group1.weight [24, 3, 4] viewed as [24, 12]
  EXPECT_EQ(rank1.matrices[3].cols, 12);
  EXPECT_EQ(rank1.p_elements, 4u + 20 + 8 + 24 + 16);
  EXPECT_EQ(rank1.q_elements, 5u * 12);
  // Rank 2: group4.weight [4, 12] would need (4 + 12) * 2 * 2 = 64 > 48 elements: sent uncompressed.
  CompressionLayout rank2 = plan_compression(view, 2, 2.0);
  ASSERT_EQ(rank2.matrices.size(), 4u);
  EXPECT_EQ(rank2.uncompressed.front().numel, 48u);
  EXPECT_EQ(rank2.matrices[0].rank, 2);
  EXPECT_EQ(rank2.q_elements, 4u * 12 * 2);
  // Rank 4: (24 + 12) * 4 * 2 = 288 is not below 24 * 12 = 288: nothing gains.
  EXPECT_EQ(plan_compression(view, 4, 2.0).matrices.size(), 0u);
  // A rank above min(rows, cols) is clamped: 20 x 12 at rank 16 -> rank 12, and then it does not gain.
  EXPECT_EQ(plan_compression(view, 16, 1.0).matrices.size(), 0u);
}

TEST(PowerSgdHook, RecoversRankOneMatricesExactlyAndKeepsVectors) {
  ToyRegression model;
  SelfCommunicator comm;
  std::vector<float> buffer(model.buffer_elems(), 0.0f);
  Rng rng(5);
  for (const GradTensor& t : model.tensors()) {
    if (t.shape.size() == 1) {
      for (size_t i = 0; i < t.numel; ++i) buffer[t.offset + i] = float(rng.normal());
      continue;
    }
    const size_t rows = size_t(t.shape[0]), cols = t.numel / rows;
    std::vector<double> u(rows), v(cols);
    for (double& x : u) x = rng.normal();
    for (double& x : v) x = rng.normal();
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c) buffer[t.offset + r * cols + c] = float(u[r] * v[c]);
  }
  std::vector<float> bucket = buffer;
  BucketView view = whole_buffer_view(model, bucket);
  PowerSgdHook hook(PowerSgdOptions{1, 0, 2.0, true, 11});
  hook.run(view, comm, nullptr, 0);
  // Tolerance: fp32 products of O(1) values through one orthogonalization, 1e-4 absolute.
  for (size_t i = 0; i < buffer.size(); ++i) ASSERT_NEAR(bucket[i], buffer[i], 1e-4) << i;
}

TEST(PowerSgdHook, BeforeTheStartStepItIsAPlainAllReduce) {
  ToyRegression model;
  SelfCommunicator comm;
  std::vector<float> buffer(model.buffer_elems());
  Rng rng(6);
  for (float& v : buffer) v = float(rng.normal());
  std::vector<float> bucket = buffer;
  BucketView view = whole_buffer_view(model, bucket);
  PowerSgdHook hook(PowerSgdOptions{1, 3, 2.0, true, 0});
  for (int step = 0; step < 3; ++step) hook.run(view, comm, nullptr, step);
  EXPECT_EQ(bucket, buffer);  // world size 1: the average is the value
  hook.run(view, comm, nullptr, 3);
  EXPECT_NE(bucket, buffer);  // random full-rank matrices are only approximated
}

TEST(PowerSgdHook, ErrorFeedbackReturnsWhatWasLeftOut) {
  // Whatever one step leaves out is added back to the next: out_0 + out_1 with a zero second gradient equals
  // in_0 in the directions the rank-1 factors span; over two steps the total error is the error of the second
  // step alone, so |in_0 - out_0 - out_1| < |in_0 - out_0| for a generic matrix.
  ToyRegression model;
  SelfCommunicator comm;
  std::vector<float> input(model.buffer_elems());
  Rng rng(8);
  for (float& v : input) v = float(rng.normal());
  std::vector<float> bucket = input;
  BucketView view = whole_buffer_view(model, bucket);
  PowerSgdHook hook(PowerSgdOptions{1, 0, 2.0, true, 1});
  hook.run(view, comm, nullptr, 0);
  std::vector<float> first = bucket;
  std::fill(bucket.begin(), bucket.end(), 0.0f);
  hook.run(view, comm, nullptr, 1);
  double error_one = 0, error_two = 0;
  for (size_t i = 0; i < input.size(); ++i) {
    error_one += std::pow(input[i] - first[i], 2);
    error_two += std::pow(input[i] - first[i] - bucket[i], 2);
  }
  EXPECT_GT(error_one, 1.0);
  EXPECT_LT(error_two, error_one * 0.95);
}

}  // namespace
}  // namespace ddpx
