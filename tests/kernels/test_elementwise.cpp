// GELU, softmax cross-entropy, column sums, patch embedding and synthetic data against CPU loops on fresh random
// data. Tolerances (norm-wise relative unless stated): fp32 GELU 1e-6; bf16 GELU 8e-3 (one bf16 rounding);
// GELU bias-gradient sums 1e-5; bf16 GELU (by table) equal in bits to the fp32 evaluation rounded to bf16;
// softmax-xent loss 1e-6 absolute, gradient 1e-6; column sums 1e-6 (a batch: the bits of one call per job where
// that takes one row split); patch/token reshapes exact; synthetic images
// 1e-5 absolute per element against the CPU formula (GPU vs CPU log/sin/cos), labels exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "gpu_guard.hpp"
#include "kernel_test_utils.hpp"
#include "kernels/column_sum.hpp"
#include "kernels/gelu.hpp"
#include "kernels/patch_embedding.hpp"
#include "kernels/softmax_xent.hpp"
#include "kernels/synthetic_data.hpp"

namespace ddpx {
namespace {

using testing::random_vector;
using testing::relative_error;

template <typename T>
void check_gelu(int64_t rows, int64_t cols, double tolerance, uint64_t seed, bool fold_later = false) {
  const int64_t n = rows * cols;
  auto x = random_vector(n, seed, 2.0), grad = random_vector(n, seed + 1), bias_start = random_vector(cols, seed + 2);
  if (!std::is_same_v<T, float>) x = testing::rounded_bf16(x), grad = testing::rounded_bf16(grad);
  std::vector<double> want_y(n), want_grad(n), want_bias(bias_start.begin(), bias_start.end());
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i], cdf = 0.5 * (1 + std::erf(v / std::sqrt(2.0)));
    want_y[i] = v * cdf;
    want_grad[i] = grad[i] * (cdf + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI));
    want_bias[i % cols] += want_grad[i];
  }
  auto d_x = testing::to_device<T>(x), d_y = testing::to_device<T>(std::vector<float>(n, 3.f)),
       d_grad = testing::to_device<T>(grad);
  auto d_bias = testing::to_device<float>(bias_start);
  DeviceBuffer<float> scratch(gelu_backward_scratch_floats(rows, cols), "scratch");
  gelu_forward<T>(d_x.get(), d_y.get(), n, nullptr);
  ColumnSumBatch folds;
  gelu_backward<T>(d_x.get(), d_grad.get(), rows, cols, d_bias.get(), scratch.get(), scratch.size(), nullptr, false,
                   fold_later ? &folds : nullptr);
  if (fold_later) {  // the bias gradient waits for the batch
    EXPECT_EQ(testing::to_host(d_bias), bias_start) << "bias gradient before the batch ran";
    EXPECT_EQ(folds.size(), 1);
    column_sum_add_batch(folds, nullptr);
  }
  EXPECT_LT(relative_error(testing::to_host(d_y), want_y), tolerance);
  EXPECT_LT(relative_error(testing::to_host(d_grad), want_grad), tolerance);
  // The bias gradient sums the fp32 products before they are stored as T: within 1e-5 of the double sums.
  EXPECT_LT(relative_error(testing::to_host(d_bias), want_bias), 1e-5) << rows << " x " << cols;
}

TEST(Gelu, Fp32MatchesErfGeluAndSumsBiasGradient) {
  DDPX_REQUIRE_GPU();
  check_gelu<float>(1600, 4096, 1e-6, 1);
  check_gelu<float>(37, 12, 1e-6, 2);
  check_gelu<float>(3, 2052, 1e-6, 3);  // columns beyond one block's 1024
  check_gelu<float>(1, 4, 1e-6, 5);     // one vector: the forward's grid is one block, the backward's one row
}

TEST(Gelu, BiasSumFoldedInALaterBatch) {
  DDPX_REQUIRE_GPU();
  check_gelu<float>(1600, 4096, 1e-6, 6, /*fold_later=*/true);
  check_gelu<__nv_bfloat16>(6000, 1024, 8e-3, 7, true);
}

TEST(Gelu, Bf16WithinOneRounding) {
  DDPX_REQUIRE_GPU();
  check_gelu<__nv_bfloat16>(100, 1000, 8e-3, 4);
}

// Host arithmetic only (runs without a GPU): the scratch size of every shape class, down to one 4-column row
// (narrower than the widest pack), holds at least one partial row and the column sum's scratch.
TEST(Gelu, BackwardScratchCoversNarrowAndWideShapes) {
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 4}, {3, 2052}, {37, 12}, {100, 1000}, {1600, 4096}, {50432, 3072}})
    EXPECT_GE(gelu_backward_scratch_floats(rows, cols), static_cast<size_t>(cols) + column_sum_scratch_floats(cols))
        << rows << " x " << cols;
}

// Equal bits, or both NaN.
void expect_same_values(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  int64_t mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = std::isnan(got[i]) ? std::isnan(want[i]) : std::memcmp(&got[i], &want[i], sizeof(float)) == 0;
    if (!same && ++mismatches <= 5)
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " against " << want[i];
  }
  EXPECT_EQ(mismatches, 0) << what;
}

// Note [GELU of bf16 by table]: every bf16 bit pattern (zero, subnormals, inf and NaN included) through the bf16
// kernels, which look most of them up, against the fp32 kernels, which evaluate, on the same values: the outputs
// equal the fp32 ones rounded to bf16 and the bias gradients (fp32 sums of the unrounded products) are equal.
TEST(Gelu, Bf16TableEqualsFp32EvaluationOnEveryValue) {
  DDPX_REQUIRE_GPU();
  const int64_t rows = 64, cols = 1024, n = rows * cols;  // 65,536 values: one of each
  std::vector<float> x(n);
  for (uint32_t bits = 0; bits < n; ++bits) {
    const uint32_t widened = bits << 16;
    std::memcpy(&x[bits], &widened, sizeof(float));
  }
  const auto grad = testing::rounded_bf16(random_vector(n, 31)), bias_start = random_vector(cols, 32);
  auto x32 = testing::to_device<float>(x), y32 = testing::to_device<float>(std::vector<float>(n, 0.f)),
       grad32 = testing::to_device<float>(grad), bias32 = testing::to_device<float>(bias_start);
  auto x16 = testing::to_device<__nv_bfloat16>(x), y16 = testing::to_device<__nv_bfloat16>(std::vector<float>(n, 0.f)),
       grad16 = testing::to_device<__nv_bfloat16>(grad);
  auto bias16 = testing::to_device<float>(bias_start);
  DeviceBuffer<float> scratch(gelu_backward_scratch_floats(rows, cols), "scratch");
  gelu_forward<float>(x32.get(), y32.get(), n, nullptr);
  gelu_forward<__nv_bfloat16>(x16.get(), y16.get(), n, nullptr);
  gelu_backward<float>(x32.get(), grad32.get(), rows, cols, bias32.get(), scratch.get(), scratch.size(), nullptr);
  gelu_backward<__nv_bfloat16>(x16.get(), grad16.get(), rows, cols, bias16.get(), scratch.get(), scratch.size(),
                               nullptr);
  expect_same_values(testing::to_host(y16), testing::rounded_bf16(testing::to_host(y32)), "forward");
  expect_same_values(testing::to_host(grad16), testing::rounded_bf16(testing::to_host(grad32)), "backward");
  expect_same_values(testing::to_host(bias16), testing::to_host(bias32), "bias gradient");
}

// Note [GELU of bf16 by table]: a graph captured before any eager bf16 call (ctest runs each test in its own
// process) captures the table fill, and its replays compute what an eager call does.
TEST(Gelu, Bf16CapturedBeforeAnyEagerCall) {
  DDPX_REQUIRE_GPU();
  const int64_t rows = 40, cols = 2048, n = rows * cols;
  const auto x = testing::rounded_bf16(random_vector(n, 41, 2.0)), grad = testing::rounded_bf16(random_vector(n, 42));
  auto d_x = testing::to_device<__nv_bfloat16>(x), d_y = testing::to_device<__nv_bfloat16>(std::vector<float>(n, 0.f));
  auto d_grad = testing::to_device<__nv_bfloat16>(grad);
  auto d_bias = testing::to_device<float>(std::vector<float>(cols, 0.f));
  DeviceBuffer<float> scratch(gelu_backward_scratch_floats(rows, cols), "scratch");
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess);
  gelu_forward<__nv_bfloat16>(d_x.get(), d_y.get(), n, stream);
  gelu_backward<__nv_bfloat16>(d_x.get(), d_grad.get(), rows, cols, d_bias.get(), scratch.get(), scratch.size(),
                               stream, true);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const auto captured_y = testing::to_host(d_y), captured_grad = testing::to_host(d_grad),
             captured_bias = testing::to_host(d_bias);
  // The same calls eagerly on fresh copies of the inputs.
  auto e_y = testing::to_device<__nv_bfloat16>(std::vector<float>(n, 0.f));
  auto e_grad = testing::to_device<__nv_bfloat16>(grad);
  auto e_bias = testing::to_device<float>(std::vector<float>(cols, 0.f));
  gelu_forward<__nv_bfloat16>(d_x.get(), e_y.get(), n, nullptr);
  gelu_backward<__nv_bfloat16>(d_x.get(), e_grad.get(), rows, cols, e_bias.get(), scratch.get(), scratch.size(),
                               nullptr, true);
  expect_same_values(captured_y, testing::to_host(e_y), "forward");
  expect_same_values(captured_grad, testing::to_host(e_grad), "backward");
  expect_same_values(captured_bias, testing::to_host(e_bias), "bias gradient");
  double sum = 0;  // and not all zero: the replay computed something
  for (float v : captured_y) sum += std::abs(v);
  EXPECT_GT(sum, 0.1 * n);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(SoftmaxCrossEntropy, MatchesReferenceAndFlagsBadLabels) {
  DDPX_REQUIRE_GPU();
  const int64_t batch = 7, classes = 1000;
  const float grad_scale = 0.25f;
  auto logits = random_vector(batch * classes, 11, 3.0);
  std::vector<int32_t> labels = {0, 999, 5, 17, 500, 3, 42};
  double want_loss = 0;
  std::vector<double> want_grad(batch * classes);
  for (int64_t b = 0; b < batch; ++b) {
    double mx = -1e300, sum = 0;
    for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, static_cast<double>(logits[b * classes + c]));
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(logits[b * classes + c] - mx);
    want_loss += (mx + std::log(sum) - logits[b * classes + labels[b]]) / batch;
    for (int64_t c = 0; c < classes; ++c)
      want_grad[b * classes + c] =
          grad_scale / batch * (std::exp(logits[b * classes + c] - mx) / sum - (c == labels[b] ? 1.0 : 0.0));
  }
  auto d_logits = testing::to_device<float>(logits);
  DeviceBuffer<int32_t> d_labels(batch, "labels");
  d_labels.upload(labels);
  DeviceBuffer<float> loss(1, "loss"), row_loss(batch, "row loss");
  auto d_grad = testing::to_device<float>(std::vector<float>(batch * classes, 4.f));
  softmax_cross_entropy<float>(d_logits.get(), d_labels.get(), batch, classes, grad_scale, loss.get(), d_grad.get(),
                               row_loss.get(), nullptr);
  EXPECT_NEAR(testing::to_host(loss)[0], want_loss, 1e-6 * std::max(1.0, want_loss));
  EXPECT_LT(relative_error(testing::to_host(d_grad), want_grad), 1e-6);

  labels[3] = 1000;  // out of range
  d_labels.upload(labels);
  softmax_cross_entropy<float>(d_logits.get(), d_labels.get(), batch, classes, grad_scale, loss.get(), d_grad.get(),
                               row_loss.get(), nullptr);
  EXPECT_TRUE(std::isnan(testing::to_host(loss)[0]));
}

TEST(ColumnSum, AddsColumnSumsDeterministically) {
  DDPX_REQUIRE_GPU();
  struct Shape {
    int64_t rows, cols, ld;
  };
  for (Shape s : {Shape{1600, 1024, 1024}, Shape{32, 51200, 51200}, Shape{1600, 4096, 4096}, Shape{5, 3, 7},
                  Shape{2000, 100, 130}, Shape{200, 3072, 3072}, Shape{7, 25, 25},
                  Shape{100, 64, 64}, Shape{127, 33, 40}}) {  // fewer than 128 rows: fewer row lanes
    auto in = random_vector(s.rows * s.ld, s.cols), start = random_vector(s.cols, s.rows);
    std::vector<double> want(start.begin(), start.end());
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c) want[c] += in[r * s.ld + c];
    auto d_in = testing::to_device<float>(in);
    const int64_t segments = s.cols % 3 == 0 ? 3 : (s.cols % 2 == 0 ? 2 : 1), width = s.cols / segments;
    std::vector<DeviceBuffer<float>> outputs;
    for (int64_t k = 0; k < segments; ++k)
      outputs.push_back(testing::to_device<float>(std::vector<float>(start.begin() + k * width,
                                                                     start.begin() + (k + 1) * width)));
    DeviceBuffer<float> scratch(column_sum_scratch_floats(s.cols), "scratch");
    ColumnSumArgs<float> args;
    args.in = d_in.get(), args.ld = s.ld, args.rows = s.rows, args.cols = s.cols, args.segment = width;
    for (int64_t k = 0; k < segments; ++k) args.outputs[k] = outputs[k].get();
    args.scratch = scratch.get(), args.scratch_floats = scratch.size();
    column_sum_add(args, nullptr);
    std::vector<float> got;
    for (const auto& o : outputs) {
      auto part = testing::to_host(o);
      got.insert(got.end(), part.begin(), part.end());
    }
    EXPECT_LT(relative_error(got, want), 1e-6) << s.rows << " x " << s.cols << " in " << segments << " segments";
    // overwrite: the outputs' old contents (NaN here) are never read; the sums are those added to zero, bit for bit.
    std::vector<float> added;
    for (auto& o : outputs) {
      DDPX_CUDA_CHECK(cudaMemset(o.get(), 0, o.size() * sizeof(float)));
    }
    column_sum_add(args, nullptr);
    for (const auto& o : outputs) {
      auto part = testing::to_host(o);
      added.insert(added.end(), part.begin(), part.end());
      DDPX_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.size() * sizeof(float)));  // NaN
    }
    args.overwrite = true;
    column_sum_add(args, nullptr);
    std::vector<float> written;
    for (const auto& o : outputs) {
      auto part = testing::to_host(o);
      written.insert(written.end(), part.begin(), part.end());
    }
    EXPECT_EQ(written, added) << s.rows << " x " << s.cols << " overwrite";
  }
}

// A batch of column sums against one column_sum_add per job (Note [A block's column sums in one kernel]): the same
// bits where column_sum_add takes one row split (up to 256 rows, or 264 and more column blocks of 32), within 1e-6
// of the double sums everywhere, accumulating or overwriting per job, in one kernel of jobs of unequal shapes.
TEST(ColumnSum, BatchEqualsOneCallPerJob) {
  DDPX_REQUIRE_GPU();
  struct Shape {
    int64_t rows, cols, ld, segments;
    bool overwrite;
  };
  const Shape shapes[] = {{124, 3072, 3072, 3, false}, {32, 3072, 3072, 1, true},   {97, 4096, 4096, 1, false},
                          {5, 3, 7, 1, false},         {600, 96, 100, 2, false},    {300, 9000, 9000, 1, true},
                          {256, 2304, 2304, 3, false}, {1, 64, 64, 1, false}};
  static_assert(std::size(shapes) == kMaxColumnSumBatch);
  struct Job {
    std::vector<float> in, start;
    DeviceBuffer<float> d_in, batched, separate;
  };
  std::vector<Job> jobs;
  ColumnSumBatch batch;
  DeviceBuffer<float> scratch(column_sum_scratch_floats(9000), "scratch");
  std::vector<ColumnSumArgs<float>> separate_calls;
  uint64_t seed = 40;
  for (const Shape& s : shapes) {
    Job j{random_vector(s.rows * s.ld, seed), random_vector(s.cols, seed + 1), {}, {}, {}};
    seed += 2;
    j.d_in = testing::to_device<float>(j.in);
    // Overwriting jobs start from NaN: their old contents must never be read.
    const std::vector<float> start = s.overwrite ? std::vector<float>(s.cols, NAN) : j.start;
    j.batched = testing::to_device<float>(start), j.separate = testing::to_device<float>(start);
    jobs.push_back(std::move(j));
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Shape& s = shapes[i];
    ColumnSumArgs<float> args;
    args.in = jobs[i].d_in.get(), args.ld = s.ld, args.rows = s.rows, args.cols = s.cols;
    args.segment = s.cols / s.segments, args.overwrite = s.overwrite;
    for (int64_t k = 0; k < s.segments; ++k) args.outputs[k] = jobs[i].batched.get() + k * args.segment;
    batch.add(args);
    for (int64_t k = 0; k < s.segments; ++k) args.outputs[k] = jobs[i].separate.get() + k * args.segment;
    args.scratch = scratch.get(), args.scratch_floats = scratch.size();
    separate_calls.push_back(args);
  }
  EXPECT_EQ(batch.size(), static_cast<int>(kMaxColumnSumBatch));
  column_sum_add_batch(batch, nullptr);
  EXPECT_EQ(batch.size(), 0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Shape& s = shapes[i];
    column_sum_add(separate_calls[i], nullptr);
    std::vector<double> want(s.cols, 0.0);
    for (int64_t c = 0; c < s.cols; ++c) want[c] = s.overwrite ? 0.0 : jobs[i].start[c];
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c) want[c] += jobs[i].in[r * s.ld + c];
    const auto batched = testing::to_host(jobs[i].batched), separate = testing::to_host(jobs[i].separate);
    EXPECT_LT(relative_error(batched, want), 1e-6) << s.rows << " x " << s.cols;
    const bool one_split = s.rows <= 256 || (s.cols + 31) / 32 >= 264;
    if (one_split) EXPECT_EQ(batched, separate) << s.rows << " x " << s.cols << ": the bits of column_sum_add";
  }
}

// A job the batch cannot run is refused when it is added, naming what is wrong (no kernel is launched).
TEST(ColumnSum, BatchRefusesAJobWithoutItsOutputs) {
  float out = 0.f, in = 0.f;
  ColumnSumArgs<float> args;
  args.in = &in, args.ld = 3, args.rows = 1, args.cols = 3, args.segment = 1;
  args.outputs[0] = &out;  // three segments named, one given
  ColumnSumBatch batch;
  try {
    batch.add(args);
    FAIL() << "a job with missing outputs was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("output 1 of 3 is missing"), std::string::npos) << e.what();
  }
  EXPECT_EQ(batch.size(), 0);
}

TEST(PatchEmbedding, ReshapesMatchConvLayout) {
  DDPX_REQUIRE_GPU();
  const PatchShape s{2, 3, 8, 4};
  const int64_t N = s.num_patches(), K = s.patch_dim(), D = 8, S = N + 1;
  auto images = random_vector(s.batch * 3 * 8 * 8, 21);
  auto d_images = testing::to_device<float>(images);
  auto d_patches = testing::to_device<float>(std::vector<float>(s.batch * N * K, 1.f));
  patchify<float>(d_images.get(), d_patches.get(), s, nullptr);
  auto patches = testing::to_host(d_patches);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t py = 0; py < 2; ++py)
      for (int64_t px = 0; px < 2; ++px)
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t ky = 0; ky < 4; ++ky)
            for (int64_t kx = 0; kx < 4; ++kx)
              ASSERT_EQ(patches[(b * N + py * 2 + px) * K + (c * 4 + ky) * 4 + kx],
                        images[((b * 3 + c) * 8 + py * 4 + ky) * 8 + px * 4 + kx]);

  auto embed = random_vector(s.batch * N * D, 22), cls = random_vector(D, 23), pos = random_vector(S * D, 24);
  auto d_embed = testing::to_device<float>(embed), d_cls = testing::to_device<float>(cls),
       d_pos = testing::to_device<float>(pos);
  auto d_tokens = testing::to_device<float>(std::vector<float>(s.batch * S * D, 1.f));
  assemble_tokens(d_embed.get(), d_cls.get(), d_pos.get(), d_tokens.get(), s.batch, N, D, nullptr);
  auto tokens = testing::to_host(d_tokens);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t t = 0; t < S; ++t)
      for (int64_t d = 0; d < D; ++d)
        ASSERT_EQ(tokens[(b * S + t) * D + d], (t == 0 ? cls[d] : embed[(b * N + t - 1) * D + d]) + pos[t * D + d]);

  auto d_gathered = testing::to_device<float>(std::vector<float>(s.batch * N * D, 1.f));
  gather_patch_token_grads<float>(d_tokens.get(), d_gathered.get(), s.batch, N, D, nullptr);
  auto gathered = testing::to_host(d_gathered);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t d = 0; d < D; ++d) ASSERT_EQ(gathered[(b * N + n) * D + d], tokens[(b * S + 1 + n) * D + d]);
}

uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

TEST(SyntheticData, MatchesCpuFormulaAndIsStandardNormal) {
  DDPX_REQUIRE_GPU();
  const int64_t batch = 5, numel = 3 * 33 * 33, classes = 1000;  // odd numel: last element has no pair
  const uint64_t seed = 77, step = 12;
  DeviceBuffer<float> images(batch * numel, "images");
  DeviceBuffer<int32_t> labels(batch, "labels");
  generate_synthetic_batch(images.get(), labels.get(), batch, numel, classes, seed, step, nullptr);
  auto got = testing::to_host(images);
  DDPX_CUDA_CHECK(cudaDeviceSynchronize());
  auto got_labels = labels.download();
  // SyntheticDataset key for rank 0: mix(mix(mix(seed ^ stream) + step) + rank).
  auto key = [&](uint64_t stream) { return mix64(mix64(mix64(seed ^ stream) + step) + 0); };
  const uint64_t image_key = key(0x696d616765ULL), label_key = key(0x6c6162656cULL);
  double sum = 0, sum_sq = 0;
  for (int64_t b = 0; b < batch; ++b) {
    EXPECT_EQ(got_labels[b], static_cast<int32_t>(mix64(label_key + b) % classes));
    for (int64_t i = 0; i < numel; i += 2) {
      const uint64_t h = mix64(image_key + static_cast<uint64_t>(b) * 0x100000000ULL + i);
      const double u1 = (static_cast<double>(h >> 40) + 0.5) / 16777216.0;
      const double u2 = static_cast<double>((h >> 16) & 0xFFFFFF) / 16777216.0;
      const double r = std::sqrt(-2 * std::log(u1)), angle = 2 * M_PI * u2;
      ASSERT_NEAR(got[b * numel + i], r * std::cos(angle), 1e-5) << b << " " << i;
      if (i + 1 < numel) ASSERT_NEAR(got[b * numel + i + 1], r * std::sin(angle), 1e-5);
    }
    for (int64_t i = 0; i < numel; ++i) sum += got[b * numel + i], sum_sq += got[b * numel + i] * got[b * numel + i];
  }
  const double n = static_cast<double>(batch * numel);
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.05);
}

}  // namespace
}  // namespace ddpx
