// BucketPlan at its edges: caps, the first-bucket cap, oversized tensors, one bucket for a huge cap, padding
// ownership, and the errors for bad tensor lists.
#include <gtest/gtest.h>

#include "comm_plan/bucket_plan.hpp"
#include "core/error.hpp"

namespace ddpx {
namespace {

// Tensors of the given sizes (elements), packed back to back with a 2-element gap after each.
std::vector<GradTensor> tensors_of(const std::vector<size_t>& sizes) {
  std::vector<GradTensor> tensors;
  size_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    tensors.push_back({"t" + std::to_string(i), offset, sizes[i], {}});
    offset += sizes[i] + 2;
  }
  return tensors;
}

BucketPlanOptions caps(size_t first_bytes, size_t cap_bytes) {
  return BucketPlanOptions{cap_bytes, first_bytes, 4};
}

std::vector<std::pair<size_t, size_t>> tensor_ranges(const BucketPlan& plan) {
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const Bucket& b : plan.buckets()) ranges.emplace_back(b.first_tensor, b.end_tensor);
  return ranges;
}

TEST(BucketPlan, FillsBucketsUpToTheCapWithoutSplitting) {
  // 10 elements = 40 bytes each; cap 100 bytes -> two tensors per bucket; first cap 40 bytes -> one.
  BucketPlan plan(tensors_of({10, 10, 10, 10, 10, 10}), caps(40, 100));
  EXPECT_EQ(tensor_ranges(plan), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 3}, {3, 5}, {5, 6}}));
  EXPECT_EQ(plan[1].tensor_elements, 20u);
  EXPECT_EQ(plan.bucket_of_tensor(4), 2u);
}

TEST(BucketPlan, BucketsAreContiguousAndOwnTheFollowingPadding) {
  BucketPlan plan(tensors_of({10, 10, 10, 10}), caps(40, 80));
  ASSERT_EQ(plan.size(), 3u);  // {t0} {t1 t2} {t3}
  EXPECT_EQ(plan[0].begin, 0u);
  EXPECT_EQ(plan[0].end, 12u);  // t0 + its gap: up to where t1 starts
  EXPECT_EQ(plan[1].begin, 12u);
  EXPECT_EQ(plan[1].end, 36u);
  EXPECT_EQ(plan[2].begin, 36u);
  EXPECT_EQ(plan[2].end, 46u);  // the last bucket ends at its last tensor
}

TEST(BucketPlan, OversizedTensorGetsItsOwnBucket) {
  BucketPlan plan(tensors_of({5, 1000, 5, 5}), caps(100, 100));
  EXPECT_EQ(tensor_ranges(plan), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 2}, {2, 4}}));
}

TEST(BucketPlan, FirstTensorLargerThanTheFirstCap) {
  BucketPlan plan(tensors_of({1000, 5}), caps(4, 1 << 20));
  EXPECT_EQ(tensor_ranges(plan), (std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 2}}));
}

TEST(BucketPlan, HugeCapGivesOneBucket) {
  BucketPlan plan(tensors_of({7, 300, 1, 20000}), caps(size_t{2000} << 20, size_t{2000} << 20));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].begin, 0u);
  EXPECT_EQ(plan[0].end, 7u + 2 + 300 + 2 + 1 + 2 + 20000);
  EXPECT_EQ(plan[0].tensor_elements, 20308u);
}

TEST(BucketPlan, ExactFitStaysInTheBucket) {
  BucketPlan plan(tensors_of({25, 25, 25}), caps(200, 200));  // 25 * 4 * 2 = 200 bytes exactly
  EXPECT_EQ(tensor_ranges(plan), (std::vector<std::pair<size_t, size_t>>{{0, 2}, {2, 3}}));
}

TEST(BucketPlan, ElementSizeScalesTheCap) {
  BucketPlanOptions half = caps(40, 40);
  half.element_bytes = 2;  // 10 elements = 20 bytes: two per bucket
  EXPECT_EQ(BucketPlan(tensors_of({10, 10, 10, 10}), half).size(), 2u);
}

TEST(BucketPlan, ComparableAndPrintable) {
  BucketPlan a(tensors_of({10, 10, 10}), caps(40, 80));
  BucketPlan b(tensors_of({10, 10, 10}), caps(40, 80));
  BucketPlan c(tensors_of({10, 10, 10}), caps(80, 80));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.signature(), b.signature());
  EXPECT_NE(a, c);
  EXPECT_NE(a.signature(), c.signature());
  const std::string table = a.table();
  EXPECT_NE(table.find("bucket"), std::string::npos);
  EXPECT_NE(table.find("t1 .. t2"), std::string::npos) << table;
}

TEST(BucketPlan, RejectsBadTensorLists) {
  EXPECT_THROW(BucketPlan({}, caps(1, 1)), Error);
  std::vector<GradTensor> overlapping{{"a", 0, 10, {}}, {"b", 5, 10, {}}};
  try {
    BucketPlan plan(overlapping, caps(100, 100));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'b' starts at element 5 inside the previous tensor 'a'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(BucketPlan({{"shape", 0, 10, {3, 3}}}, caps(100, 100)), Error);
  EXPECT_THROW(BucketPlan({{"empty", 0, 0, {}}}, caps(100, 100)), Error);
  EXPECT_THROW(BucketPlan(tensors_of({1}), caps(0, 100)), Error);
}

}  // namespace
}  // namespace ddpx
