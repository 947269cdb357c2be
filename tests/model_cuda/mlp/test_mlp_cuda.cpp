// The CUDA MLP against the CPU reference MlpCpu<double> on fresh random data (logits, loss, every parameter
// gradient, the ready spans, zero padding), gradient accumulation, zero_grads() without a pass over the buffer
// (every slot overwritten, padding untouched), CUDA-graph replay against eager steps, and the shapes it refuses.
// GPU-labelled: every test skips without a GPU.
// Tolerances (norm-wise relative per tensor, against double; the ViT's, which the shallower MLP meets with room):
//   fp32: logits 1e-5, loss 1e-5 absolute, gradients 1e-4;
//   tf32: logits 5e-3, loss 5e-3 absolute, gradients 2e-2 (10-bit mantissa matmul inputs);
//   bf16: logits 3e-2, loss 3e-2 absolute, gradients 8e-2 (8-bit mantissa weights and activations);
//   accumulation: 1e-6; zero_grads() after other steps and graph replay: bit-identical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.hpp"
#include "error_expect.hpp"
#include "gpu_guard.hpp"
#include "../cuda_test_support.hpp"
#include "model/mlp/mlp_cpu.hpp"
#include "model/mlp/mlp_init.hpp"
#include "model_cuda/device_buffer.hpp"
#include "model_cuda/mlp/mlp_cuda.hpp"

namespace ddpx {
namespace {

// Layers of different widths and inputs, so a transposed or misplaced operand cannot pass.
const char* kMixedSpec = "mlp:image=8,channels=3,layers=3,width=48,classes=7";

using cuda_test::random_normal;
using cuda_test::relative_error;
using cuda_test::Spans;
using cuda_test::Stream;
using cuda_test::Tolerance;

// A model with torch.nn.Linear's initialization and random images and labels, on device.
struct MlpOnDevice {
  MlpOnDevice(const std::string& spec, int64_t batch, Precision precision, uint64_t seed)
      : layout(parse_mlp_spec(spec)),
        batch(batch),
        params(layout.buffer_size()),
        images(random_normal(static_cast<size_t>(batch * layout.config().in_features()), seed + 1)),
        labels(static_cast<size_t>(batch)),
        model(layout, batch, precision, stream.get()),
        d_images(images.size(), "images"),
        d_labels(labels.size(), "labels"),
        d_loss(1, "loss") {
    init_mlp_params(layout, params.data(), seed);
    Rng rng(seed + 2);
    for (auto& l : labels) l = static_cast<int32_t>(rng.below(static_cast<uint64_t>(layout.config().num_classes)));
    DDPX_CUDA_CHECK(cudaMemcpy(model.params(), params.data(), params.size() * 4, cudaMemcpyHostToDevice));
    model.sync_low_precision_weights();
    d_images.upload(images);
    d_labels.upload(labels);
  }
  std::vector<float> download(const float* device) {
    DDPX_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    std::vector<float> v(layout.buffer_size());
    DDPX_CUDA_CHECK(cudaMemcpy(v.data(), device, v.size() * 4, cudaMemcpyDeviceToHost));
    return v;
  }

  MlpLayout layout;
  int64_t batch;
  std::vector<float> params, images;
  std::vector<int32_t> labels;
  Stream stream;
  MlpCuda model;
  DeviceBuffer<float> d_images;
  DeviceBuffer<int32_t> d_labels;
  DeviceBuffer<float> d_loss;
};

void compare_with_cpu(const std::string& spec, int64_t batch, Precision precision, const Tolerance& tol) {
  MlpOnDevice s(spec, batch, precision, 7);
  const int64_t classes = s.layout.config().num_classes;
  const float grad_scale = 0.5f;
  // CPU reference in double.
  MlpCpu<double> cpu(s.layout, batch);
  const std::vector<double> p(s.params.begin(), s.params.end()), x(s.images.begin(), s.images.end());
  std::vector<double> want_logits(static_cast<size_t>(batch * classes)), dlogits(want_logits.size());
  std::vector<double> want_grads(s.layout.buffer_size(), 0.0);
  cpu.forward(p.data(), x.data(), batch, want_logits.data());
  const double want_loss = softmax_cross_entropy<double>(want_logits.data(), s.labels.data(), batch, classes,
                                                         dlogits.data(), grad_scale);
  Spans want_spans;
  cpu.backward(p.data(), dlogits.data(), want_grads.data(), [&](size_t b, size_t e) { want_spans.emplace_back(b, e); });

  DeviceBuffer<float> d_logits(want_logits.size(), "logits");
  s.model.forward(s.d_images.get(), batch, d_logits.get());
  Spans spans;
  s.model.forward_backward(s.d_images.get(), s.d_labels.get(), batch, grad_scale, s.d_loss.get(),
                           [&](size_t b, size_t e) { spans.emplace_back(b, e); });
  const std::vector<float> grads = s.download(s.model.grads());
  const std::vector<float> logits = d_logits.download();
  const float loss = s.d_loss.download()[0];

  const std::string where = spec + " " + std::string(precision_name(precision));
  EXPECT_EQ(spans, want_spans) << where;
  const double logit_error = relative_error(logits.data(), want_logits.data(), logits.size());
  EXPECT_LT(logit_error, tol.logits) << where << " logits";
  EXPECT_NEAR(loss, want_loss, tol.loss) << where << " loss";
  double worst = 0;
  std::string worst_name;
  for (const TensorSlot& t : s.layout.tensors()) {
    const double e = relative_error(grads.data() + t.offset, want_grads.data() + t.offset, t.numel);
    EXPECT_LT(e, tol.grads) << where << " gradient of " << t.name;
    if (e > worst) worst = e, worst_name = t.name;
  }
  std::vector<char> used(s.layout.buffer_size(), 0);
  for (const TensorSlot& t : s.layout.tensors()) std::fill(used.begin() + t.offset, used.begin() + t.offset + t.numel, 1);
  for (size_t i = 0; i < used.size(); ++i)
    if (!used[i]) ASSERT_EQ(grads[i], 0.f) << where << " padding element " << i;
  std::printf("[ measured ] %s batch %lld: logits rel err %.2e, loss %.6f vs %.6f, worst gradient rel err %.2e (%s)\n",
              where.c_str(), static_cast<long long>(batch), logit_error, loss, want_loss, worst, worst_name.c_str());
}

TEST(MlpCuda, Fp32MatchesCpuReference) {
  DDPX_REQUIRE_GPU();
  compare_with_cpu("mlp_tiny_test", 3, Precision::fp32, {1e-5, 1e-5, 1e-4});
  compare_with_cpu(kMixedSpec, 5, Precision::fp32, {1e-5, 1e-5, 1e-4});
}

TEST(MlpCuda, Tf32WithinTf32Tolerance) {
  DDPX_REQUIRE_GPU();
  compare_with_cpu("mlp_tiny_test", 3, Precision::tf32, {5e-3, 5e-3, 2e-2});
  compare_with_cpu(kMixedSpec, 5, Precision::tf32, {5e-3, 5e-3, 2e-2});
}

TEST(MlpCuda, Bf16WithinBf16Tolerance) {
  DDPX_REQUIRE_GPU();
  compare_with_cpu("mlp_tiny_test", 3, Precision::bf16, {3e-2, 3e-2, 8e-2});
  compare_with_cpu(kMixedSpec, 5, Precision::bf16, {3e-2, 3e-2, 8e-2});
}

TEST(MlpCuda, GradientAccumulationAddsMicroSteps) {
  DDPX_REQUIRE_GPU();
  MlpOnDevice one("mlp_tiny_test", 4, Precision::fp32, 3), two("mlp_tiny_test", 4, Precision::fp32, 3);
  one.model.forward_backward(one.d_images.get(), one.d_labels.get(), 4, 1.f, one.d_loss.get());
  for (int i = 0; i < 2; ++i)
    two.model.forward_backward(two.d_images.get(), two.d_labels.get(), 4, 0.5f, two.d_loss.get());
  const auto a = one.download(one.model.grads()), b = two.download(two.model.grads());
  EXPECT_LT(relative_error(b.data(), a.data(), a.size()), 1e-6);
}

// zero_grads() zeroes nothing: the next backward writes every gradient (model_cuda/cuda_model.hpp). A backward
// after other steps' gradients (and an accumulation of two micro-batches after it) equals the same on a fresh model
// bit for bit only if every tensor slot has one overwriting writer; the padding, never written, stays zero.
TEST(MlpCuda, ZeroGradsNeedsNoPassOverTheBufferAndPaddingStaysZero) {
  DDPX_REQUIRE_GPU();
  for (Precision precision : {Precision::fp32, Precision::bf16})
    for (int micro : {1, 2}) {
      MlpOnDevice used(kMixedSpec, 4, precision, 7), fresh(kMixedSpec, 4, precision, 7);
      used.model.forward_backward(used.d_images.get(), used.d_labels.get(), 4, 1.f, used.d_loss.get());
      used.model.forward_backward(used.d_images.get(), used.d_labels.get(), 4, 3.f, used.d_loss.get());
      used.model.zero_grads();
      fresh.model.zero_grads();
      for (int m = 0; m < micro; ++m) {
        used.model.forward_backward(used.d_images.get(), used.d_labels.get(), 4, 0.5f, used.d_loss.get());
        fresh.model.forward_backward(fresh.d_images.get(), fresh.d_labels.get(), 4, 0.5f, fresh.d_loss.get());
      }
      const auto a = used.download(used.model.grads()), b = fresh.download(fresh.model.grads());
      EXPECT_EQ(a, b) << precision_name(precision) << ", " << micro << " micro-batch(es)";
      cuda_test::expect_tensors_written_padding_clean(used.layout, a, std::string(precision_name(precision)));
    }
}

// Three SGD steps eager, and the same steps replayed from one captured graph of a whole step: bit-identical.
void expect_graph_replay_equals_eager(Precision precision) {
  const OptimizerSpec sgd{.kind = OptimizerKind::sgd, .lr = 0.05f, .weight_decay = 1e-4f, .momentum = 0.9f};
  auto train = [&](bool graph) {
    MlpOnDevice s(kMixedSpec, 8, precision, 11);
    s.model.zero_grads();
    s.model.forward_backward(s.d_images.get(), s.d_labels.get(), 8, 1.f, s.d_loss.get());
    s.model.optimizer_step(sgd, 1);
    cudaGraphExec_t exec = nullptr;
    cudaGraph_t captured = nullptr;
    if (graph) {
      DDPX_CUDA_CHECK(cudaStreamBeginCapture(s.stream.get(), cudaStreamCaptureModeThreadLocal));
      s.model.zero_grads();
      s.model.forward_backward(s.d_images.get(), s.d_labels.get(), 8, 1.f, s.d_loss.get());
      s.model.optimizer_step(sgd, 2);
      DDPX_CUDA_CHECK(cudaStreamEndCapture(s.stream.get(), &captured));
      DDPX_CUDA_CHECK(cudaGraphInstantiate(&exec, captured, 0));
    }
    std::vector<float> losses;
    for (int step = 2; step <= 4; ++step) {
      if (graph) {
        DDPX_CUDA_CHECK(cudaGraphLaunch(exec, s.stream.get()));
      } else {
        s.model.zero_grads();
        s.model.forward_backward(s.d_images.get(), s.d_labels.get(), 8, 1.f, s.d_loss.get());
        s.model.optimizer_step(sgd, 2);  // the captured step number, replayed
      }
      DDPX_CUDA_CHECK(cudaStreamSynchronize(s.stream.get()));
      losses.push_back(s.d_loss.download()[0]);
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (captured) cudaGraphDestroy(captured);
    return std::make_pair(s.download(s.model.params()), losses);
  };
  const auto eager = train(false), replayed = train(true);
  EXPECT_EQ(eager.second, replayed.second) << precision_name(precision) << " losses";
  EXPECT_EQ(eager.first, replayed.first) << precision_name(precision) << ": parameters differ after graph replay";
  EXPECT_GT(eager.second.front(), eager.second.back()) << precision_name(precision) << ": SGD did not lower the loss";
}

// Note [bf16 weight gradients in their fp32 slots] (model_cuda/cuda_model.hpp): every layer's weight gradient
// rounded to bf16 in its slots' first half, the biases the fp32 model's, the update reading the widened values.
TEST(MlpCuda, Bf16WeightGradientsAreTheFp32OnesRoundedAndTheUpdateWidensThem) {
  DDPX_REQUIRE_GPU();
  MlpOnDevice plain(kMixedSpec, 4, Precision::bf16, 17), packed(kMixedSpec, 4, Precision::bf16, 17);
  packed.model.use_bf16_weight_gradients();
  EXPECT_EQ(packed.model.bf16_gradient_regions().size(), 1 + packed.layout.hidden.size());
  for (MlpOnDevice* s : {&plain, &packed}) {
    s->model.zero_grads();
    s->model.forward_backward(s->d_images.get(), s->d_labels.get(), 4, 0.5f, s->d_loss.get());
  }
  const std::vector<float> fp32_grads = plain.download(plain.model.grads());
  const std::vector<float> packed_grads = packed.download(packed.model.grads());
  const std::vector<float> before = packed.download(packed.model.params());
  packed.model.optimizer_step(OptimizerSpec{.kind = OptimizerKind::sgd, .lr = 0.1f}, 1);
  cuda_test::expect_bf16_weight_gradients(packed.model.bf16_gradient_regions(), fp32_grads, packed_grads, before,
                                          packed.download(packed.model.params()), 0.1f, kMixedSpec);
}

TEST(MlpCuda, GraphReplayEqualsEager) {
  DDPX_REQUIRE_GPU();
  expect_graph_replay_equals_eager(Precision::fp32);
  expect_graph_replay_equals_eager(Precision::bf16);
}

TEST(MlpCuda, RefusesShapesItsKernelsCannotTakeAndBatchesAboveTheMaximum) {
  DDPX_REQUIRE_GPU();
  Stream stream;
  testing::expect_error([&] { MlpCuda(MlpLayout(parse_mlp_spec("mlp_tiny_test:width=30")), 2, Precision::fp32,
                                      stream.get()); },
                        {"multiples of 4", "width 30", "--device cpu"});
  const MlpLayout layout(parse_mlp_spec("mlp_tiny_test"));
  MlpCuda model(layout, 2, Precision::fp32, stream.get());
  DeviceBuffer<float> images(3 * layout.config().in_features(), "images"), logits(30, "logits");
  testing::expect_error([&] { model.forward(images.get(), 3, logits.get()); }, {"batch 3", "mlp_tiny_test"});
}

}  // namespace
}  // namespace ddpx
