// The device numerics check (kernels/numerics_check.hpp): the optimizer kernels note the lowest offset of a
// non-finite gradient in the same pass, the check kernel keeps the FIRST bad step with its fault, loss and
// offset, and both work inside a captured CUDA graph (the flag is updated on every replay).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gpu_guard.hpp"
#include "kernel_test_utils.hpp"
#include "kernels/numerics_check.hpp"
#include "kernels/optimizer.hpp"

namespace ddpx {
namespace {

using testing::random_vector;

NumericsFlag read_flag(const DeviceBuffer<NumericsFlag>& flag) {
  NumericsFlag host{};
  EXPECT_EQ(cudaMemcpy(&host, flag.get(), sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

void set_loss(const DeviceBuffer<float>& loss, float value) {
  ASSERT_EQ(cudaMemcpy(loss.get(), &value, sizeof value, cudaMemcpyHostToDevice), cudaSuccess);
}

TEST(NumericsCheck, FirstBadGradientStepIsKeptWithItsOffset) {
  DDPX_REQUIRE_GPU();
  const int64_t n = 4096;
  DeviceBuffer<NumericsFlag> flag(1, "flag");
  DeviceBuffer<float> loss(1, "loss");
  numerics_flag_reset(flag.get(), nullptr);
  auto p = testing::to_device<float>(random_vector(n, 1));
  std::vector<float> g = random_vector(n, 2);
  for (const char* optimizer : {"sgd", "adamw"}) {
    SCOPED_TRACE(optimizer);
    numerics_flag_reset(flag.get(), nullptr);
    auto m = testing::to_device<float>(std::vector<float>(n, 0.f)), v = testing::to_device<float>(std::vector<float>(n, 0.f));
    for (int step = 1; step <= 4; ++step) {
      std::vector<float> grads = g;
      if (step == 2) grads[1000] = std::numeric_limits<float>::infinity(), grads[3001] = NAN;  // lowest: 1000
      if (step == 3) grads[7] = NAN;  // later: must not replace step 2
      auto d_g = testing::to_device<float>(grads);
      set_loss(loss, 2.3f);
      if (std::string(optimizer) == "sgd") {
        SgdUpdate u;
        u.lr = 1e-3f;
        u.nonfinite_gradient = &flag.get()->step_bad_offset;
        sgd_update(p.get(), d_g.get(), nullptr, nullptr, n, u, nullptr);
      } else {
        AdamWUpdate u;
        u.lr = 1e-3f;
        u.nonfinite_gradient = &flag.get()->step_bad_offset;
        adamw_update(p.get(), d_g.get(), m.get(), v.get(), nullptr, n, u, nullptr);
      }
      numerics_check_step(flag.get(), loss.get(), 1e4f, nullptr);
    }
    const NumericsFlag f = read_flag(flag);
    EXPECT_EQ(f.steps_checked, 4u);
    EXPECT_EQ(f.first_bad_check, 2u);
    EXPECT_EQ(f.fault, 2);
    EXPECT_EQ(f.first_bad_offset, 1000u);
    EXPECT_EQ(f.step_bad_offset, ~0ull) << "re-armed after every step";
  }
}

TEST(NumericsCheck, LossFaultsAndDivergenceAlsoInsideACapturedGraph) {
  DDPX_REQUIRE_GPU();
  DeviceBuffer<NumericsFlag> flag(1, "flag");
  DeviceBuffer<float> loss(1, "loss");
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  numerics_flag_reset(flag.get(), stream);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess);
  numerics_check_step(flag.get(), loss.get(), 100.f, stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  // Losses 2, 3, 250 (> 100 x max(2, 1) = 200: diverged at the third replay), then NaN (later: not kept).
  for (const float value : {2.f, 3.f, 250.f, NAN}) {
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    set_loss(loss, value);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  NumericsFlag f = read_flag(flag);
  EXPECT_EQ(f.steps_checked, 4u);
  EXPECT_EQ(f.first_bad_check, 3u);
  EXPECT_EQ(f.fault, 3);
  EXPECT_EQ(f.bad_loss, 250.f);
  EXPECT_EQ(f.reference_loss, 2.f);
  // A non-finite loss is fault 1, whatever the ratio (0: divergence off).
  numerics_flag_reset(flag.get(), stream);
  set_loss(loss, -INFINITY);
  numerics_check_step(flag.get(), loss.get(), 0.f, stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  f = read_flag(flag);
  EXPECT_EQ(f.first_bad_check, 1u);
  EXPECT_EQ(f.fault, 1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace ddpx
