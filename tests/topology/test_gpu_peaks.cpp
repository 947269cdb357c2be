// GPU peaks for MFU (topology/gpu_peaks.hpp): the published dense bf16 figures by the names CUDA reports, the most
// specific name first, and no figure for a GPU not in the table.
#include <gtest/gtest.h>

#include "topology/gpu_peaks.hpp"

namespace ddpx {
namespace {

TEST(GpuPeaks, PublishedDenseBf16FiguresByName) {
  EXPECT_EQ(dense_bf16_peak_flops("NVIDIA H200"), 989e12);
  EXPECT_EQ(dense_bf16_peak_flops("NVIDIA H100 80GB HBM3"), 989e12);
  EXPECT_EQ(dense_bf16_peak_flops("NVIDIA H100 PCIe"), 756e12);
  EXPECT_EQ(dense_bf16_peak_flops("NVIDIA A100-SXM4-80GB"), 312e12);
  EXPECT_EQ(dense_bf16_peak_flops("NVIDIA L40S"), 362e12);
  EXPECT_FALSE(dense_bf16_peak_flops("cpu").has_value());
  EXPECT_FALSE(dense_bf16_peak_flops("NVIDIA GeForce RTX 4090").has_value());
  EXPECT_FALSE(dense_bf16_peak_flops("NVIDIA L40").has_value());  // not the L40S: no figure rather than its
}

}  // namespace
}  // namespace ddpx
