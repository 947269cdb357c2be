// The recipe kernels (kernels/recipe.hpp) against their CPU twins on fresh random data (GPU-labelled: they skip
// without a GPU). Tolerances: the rate is the same double closed form rounded to fp32 (exact); the clip norm sums
// in double in another order (1e-6 relative) and the clipped values follow (1e-6 norm-wise); the EMA is the same
// fp32 operations (exact); soft cross-entropy is fp32 on the device against double on the CPU (1e-5 on the loss,
// 1e-6 norm-wise on the gradient); mixup is the same two fp32 products (exact) and cutmix a copy (exact); an SGD
// step reading its rate from the device equals the one given the same rate as an argument, bit for bit, inside a
// replayed graph.
#include <gtest/gtest.h>

#include "core/cuda_check.hpp"
#include "data/batch_mixing.hpp"
#include "gpu_guard.hpp"
#include "kernel_test_utils.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/recipe.hpp"
#include "model/cross_entropy.hpp"
#include "optim/grad_clip.hpp"
#include "optim/lr_schedule.hpp"
#include "optim/weight_average.hpp"

namespace ddpx {
namespace {

using testing::random_vector;
using testing::relative_error;

// The kernel's argument: the host schedule's own formula (core/lr_formula.hpp), one closed form on both sides.
LrFormula device_form(const LrSchedule& s, double base_lr) { return s.formula(base_lr); }

TEST(RecipeKernels, DeviceRateEqualsTheScheduleEveryStep) {
  DDPX_REQUIRE_GPU();
  for (const char* text : {"cosine", "linear", "step:7:0.5", "constant"}) {
    LrSchedule s = parse_lr_schedule(text);
    s.total_steps = 60, s.warmup_steps = 9, s.warmup_start_factor = 0.1;
    if (s.kind == LrScheduleKind::cosine || s.kind == LrScheduleKind::linear) s.min_lr = 1e-4;
    DeviceBuffer<long long> step(1, "step");
    DeviceBuffer<float> lr(1, "lr");
    step.upload(std::vector<long long>{0});
    for (int64_t k = 1; k <= s.total_steps; ++k) {
      advance_learning_rate(device_form(s, 0.05), step.get(), lr.get(), nullptr);
      ASSERT_EQ(testing::to_host(lr)[0], static_cast<float>(s.rate_at(0.05, k))) << text << " step " << k;
    }
  }
}

TEST(RecipeKernels, ReplayedSgdGraphFollowsTheDeviceRate) {
  DDPX_REQUIRE_GPU();
  const int64_t n = 4096;
  LrSchedule s = parse_lr_schedule("cosine");
  s.total_steps = 8, s.warmup_steps = 2;
  auto p0 = random_vector(n, 1), g = random_vector(n, 2);
  auto graph_p = testing::to_device<float>(p0), eager_p = testing::to_device<float>(p0);
  auto d_g = testing::to_device<float>(g);
  DeviceBuffer<long long> step(1, "step");
  DeviceBuffer<float> lr(1, "lr");
  step.upload(std::vector<long long>{0});
  cudaStream_t stream;
  DDPX_CUDA_CHECK(cudaStreamCreate(&stream));
  SgdUpdate on_device;
  on_device.lr_on_device = lr.get();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  DDPX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  advance_learning_rate(device_form(s, 0.1), step.get(), lr.get(), stream);
  sgd_update(graph_p.get(), d_g.get(), nullptr, nullptr, n, on_device, stream);
  DDPX_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  DDPX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int64_t k = 1; k <= s.total_steps; ++k) {
    DDPX_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    SgdUpdate eager;
    eager.lr = static_cast<float>(s.rate_at(0.1, k));
    sgd_update(eager_p.get(), d_g.get(), nullptr, nullptr, n, eager, stream);
    DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
    ASSERT_EQ(testing::to_host(graph_p), testing::to_host(eager_p)) << "step " << k;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(RecipeKernels, ClipMatchesTheCpuClip) {
  DDPX_REQUIRE_GPU();
  for (float max_norm : {0.5f, 1e4f}) {
    const int64_t n = 100003;
    auto g = random_vector(n, 5, 0.01);
    std::vector<float> want = g;
    const float want_norm = clip_grad_norm_cpu(want.data(), want.size(), max_norm);
    auto d_g = testing::to_device<float>(g);
    DeviceBuffer<double> partials(clip_partials_count(), "partials");
    DeviceBuffer<float> norm(1, "norm"), coefficient(1, "coefficient");
    clip_grad_norm(d_g.get(), n, max_norm, partials.get(), norm.get(), coefficient.get(), nullptr);
    EXPECT_NEAR(testing::to_host(norm)[0], want_norm, 1e-6 * want_norm);
    EXPECT_LT(relative_error(testing::to_host(d_g), want), 1e-6) << max_norm;
  }
}

TEST(RecipeKernels, WeightAverageMatchesTheCpuAverage) {
  DDPX_REQUIRE_GPU();
  const int64_t n = 5000;
  WeightAverage cpu(0.999, n);
  DeviceBuffer<float> values(n, "ema");
  for (int k = 0; k < 3; ++k) {
    auto p = random_vector(n, 20 + k);
    cpu.update(p.data(), p.size());
    auto d_p = testing::to_device<float>(p);
    weight_average_update(values.get(), d_p.get(), n, static_cast<float>(0.999), static_cast<float>(1.0 - 0.999),
                          k == 0, nullptr);
  }
  EXPECT_EQ(testing::to_host(values), cpu.values());
}

TEST(RecipeKernels, SoftCrossEntropyMatchesTheCpuLoss) {
  DDPX_REQUIRE_GPU();
  const int64_t batch = 37, classes = 1000;
  auto logits = random_vector(batch * classes, 9, 3.0);
  std::vector<int32_t> labels(batch), partners(batch);
  for (int64_t b = 0; b < batch; ++b) labels[b] = static_cast<int32_t>((b * 7919) % classes);
  for (int64_t b = 0; b < batch; ++b) partners[b] = labels[(b + batch - 1) % batch];
  DeviceBuffer<int32_t> d_labels(batch, "labels"), d_partners(batch, "partners");
  d_labels.upload(labels), d_partners.upload(partners);
  auto d_logits = testing::to_device<float>(logits);
  DeviceBuffer<float> loss(1, "loss"), dlogits(batch * classes, "dlogits"), rows(batch, "rows");
  for (bool mixed : {false, true}) {
    const ClassTargets targets{.labels = labels.data(), .mixed_labels = mixed ? partners.data() : nullptr,
                               .mix = 0.35, .label_smoothing = 0.1};
    std::vector<double> logits64(logits.begin(), logits.end()), want(logits.size());
    const double want_loss =
        softmax_cross_entropy<double>(logits64.data(), targets, batch, classes, want.data(), 0.5);
    softmax_cross_entropy_soft<float>(d_logits.get(), d_labels.get(), mixed ? d_partners.get() : nullptr, 0.35f,
                                      0.1f, batch, classes, 0.5f, loss.get(), dlogits.get(), rows.get(), nullptr);
    EXPECT_NEAR(testing::to_host(loss)[0], want_loss, 1e-5 * want_loss) << mixed;
    EXPECT_LT(relative_error(testing::to_host(dlogits), want), 1e-5) << mixed;
  }
}

TEST(RecipeKernels, MixupAndCutmixMatchTheCpuMixing) {
  DDPX_REQUIRE_GPU();
  const int64_t batch = 5, channels = 3, height = 28, width = 24;
  auto images = random_vector(batch * channels * height * width, 31);
  std::vector<int32_t> labels = {3, 1, 4, 1, 5}, partners(batch);
  DeviceBuffer<int32_t> d_labels(batch, "labels"), d_partners(batch, "partners");
  d_labels.upload(labels);
  for (const MixDraw& draw : {MixDraw{.kind = MixKind::mixup, .lambda = 0.3}, cutmix_draw(0.6, 20, 3, height, width)}) {
    std::vector<float> want = images;
    apply_mix(want.data(), labels.data(), partners.data(), batch, channels, height, width, draw);
    auto in = testing::to_device<float>(images);
    DeviceBuffer<float> out(images.size(), "mixed");
    apply_mix(in.get(), out.get(), d_labels.get(), d_partners.get(), batch, channels, height, width,
              DeviceMixDraw{.kind = draw.kind == MixKind::mixup ? 1 : 2, .own = static_cast<float>(draw.lambda),
                            .other = static_cast<float>(1.0 - draw.lambda), .x1 = draw.x1, .y1 = draw.y1,
                            .x2 = draw.x2, .y2 = draw.y2},
              nullptr);
    EXPECT_EQ(testing::to_host(out), want);
    DDPX_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_EQ(d_partners.download(), partners);
  }
}

}  // namespace
}  // namespace ddpx
