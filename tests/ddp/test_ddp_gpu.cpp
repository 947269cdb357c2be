// GPU tests (skip without a GPU; run on the GPU machine with world size 1):
//  - NCCL with one rank: collectives on device buffers, agreement over it;
//  - CastHook's CUDA kernels == the CPU casts, bit for bit;
//  - PowerSGD on the GPU == PowerSGD on the CPU over several steps (error feedback and warm start included),
//    on unaligned, aligned and large shapes, ranks 1..10 (every kernel path);
//  - a reducer step captured into a CUDA graph and replayed == the same steps run eagerly;
//  - the watchdog on the CUDA path: a collective that hangs on the communication stream (a fake backend's host
//    function, released only by abort(), as ncclCommAbort releases NCCL's kernels) is aborted after the timeout
//    and every later call reports it, in eager steps and in CUDA-graph replays (before_replay/after_replay);
//  - NCCL's own abort (one rank): later calls fail with the documented message.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "ddp/comm_hook_factory.hpp"
#include "core/error.hpp"
#include "error_expect.hpp"
#include "core/rng.hpp"
#include "ddp/cast_hook.hpp"
#include "ddp/cast_kernels.hpp"
#include "ddp/powersgd_hook.hpp"
#include "core/reduced_gradients.hpp"
#include "ddp/reducer.hpp"
#include "dist/agreement.hpp"
#include "dist/nccl_communicator.hpp"
#include "dist/self_communicator.hpp"
#include "dist/watchdog.hpp"
#include "gpu_guard.hpp"
#include "toy_regression.hpp"

namespace ddpx {
namespace {

using testing::ToyRegression;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

template <typename T>
struct DeviceArray {
  explicit DeviceArray(size_t n) : count(n) { cudaMalloc(&data, n * sizeof(T) + 1); }
  ~DeviceArray() { cudaFree(data); }
  void upload(const std::vector<T>& host) { cudaMemcpy(data, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice); }
  std::vector<T> download() const {
    std::vector<T> host(count);
    cudaMemcpy(host.data(), data, count * sizeof(T), cudaMemcpyDeviceToHost);
    return host;
  }
  T* data = nullptr;
  size_t count;
};

std::vector<float> random_values(size_t n, uint64_t seed, double scale) {
  Rng rng(seed);
  std::vector<float> values(n);
  for (float& v : values) v = float(rng.normal() * scale);
  return values;
}

std::unique_ptr<NcclCommunicator> one_rank_nccl() {
  return std::make_unique<NcclCommunicator>(NcclCommunicator::new_unique_id(), 0, 1, 0);
}

TEST(NcclOneRank, CollectivesOnDeviceBuffers) {
  DDPX_REQUIRE_GPU();
  auto comm = one_rank_nccl();
  std::vector<float> values = random_values(1000, 1, 1.0);
  DeviceArray<float> device(values.size()), gathered(values.size());
  device.upload(values);
  comm->all_reduce(device.data, values.size(), CommDType::f32, ReduceOp::avg, nullptr);
  comm->all_reduce(device.data, values.size(), CommDType::f32, ReduceOp::max, nullptr);
  comm->broadcast(device.data, values.size(), CommDType::f32, 0, nullptr);
  comm->all_gather(device.data, gathered.data, values.size(), CommDType::f32, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(device.download(), values);
  EXPECT_EQ(gathered.download(), values);
  comm->barrier();
  EXPECT_NO_THROW(require_agreement(*comm, "--model", "vit_l_32"));
  EXPECT_EQ(comm->async_error(), "");
}

TEST(CastKernels, MatchTheCpuCastsBitForBit) {
  DDPX_REQUIRE_GPU();
  std::vector<float> values = random_values(100003, 2, 300.0);
  values[0] = 1e6f;   // overflows fp16
  values[1] = 1e-9f;  // underflows fp16
  DeviceArray<float> input(values.size()), widened(values.size());
  DeviceArray<uint16_t> narrow(values.size());
  input.upload(values);
  // Offset 0: the 4-wide loop and a tail of 3 (100003 = 4 * 25000 + 3); offset 1: unaligned, element by element.
  for (size_t offset : {size_t{0}, size_t{1}})
    for (WireFormat format : {WireFormat::fp16, WireFormat::bf16}) {
      const size_t count = values.size() - offset;
      std::vector<uint16_t> cpu_narrow(count);
      std::vector<float> cpu_widened(count);
      scale_to_wire_format(values.data() + offset, cpu_narrow.data(), count, 0.25f, format);
      widen_from_wire_format(cpu_narrow.data(), cpu_widened.data(), count, format);
      launch_scale_to_wire_format(input.data + offset, narrow.data + offset, count, 0.25f, format, nullptr);
      launch_widen_from_wire_format(narrow.data + offset, widened.data + offset, count, format, nullptr);
      CUDA_OK(cudaDeviceSynchronize());
      const std::vector<uint16_t> got_narrow = narrow.download();
      const std::vector<float> got_widened = widened.download();
      EXPECT_EQ(std::vector<uint16_t>(got_narrow.begin() + offset, got_narrow.end()), cpu_narrow) << offset;
      EXPECT_EQ(std::vector<float>(got_widened.begin() + offset, got_widened.end()), cpu_widened) << offset;
    }
}

void compare_powersgd_cpu_and_gpu(const std::vector<GradTensor>& tensors, double tolerance) {
  const size_t end = tensors.back().offset + tensors.back().numel;
  SelfCommunicator host_comm(BufferMemory::host), device_comm(BufferMemory::cuda);
  // 1, 3: register widths 1 and 4 with a partial factor; 4, 8: full widths; 10: two factor passes (8 + 2),
  // Gram-Schmidt in memory and the generic P Q^T loop.
  for (int64_t rank : {1, 3, 4, 8, 10}) {
    PowerSgdHook host_hook(PowerSgdOptions{rank, 1, 2.0, true, 5}), device_hook(PowerSgdOptions{rank, 1, 2.0, true, 5});
    DeviceArray<float> device(end);
    for (int step = 0; step < 4; ++step) {
      std::vector<float> host = random_values(end, 10 + uint64_t(step), 1.0);
      device.upload(host);
      BucketView host_view{0, host.data(), 0, end, tensors, GradDevice::cpu};
      BucketView device_view{0, device.data, 0, end, tensors, GradDevice::cuda};
      host_hook.run(host_view, host_comm, nullptr, step);
      device_hook.run(device_view, device_comm, nullptr, step);
      CUDA_OK(cudaDeviceSynchronize());
      std::vector<float> from_device = device.download();
      double worst = 0;
      for (size_t i = 0; i < end; ++i) worst = std::max(worst, std::fabs(double(from_device[i]) - host[i]));
      EXPECT_LT(worst, tolerance) << "rank " << rank << " step " << step;
    }
  }
}

// Three [16, 12] matrices (one batched gemm of 3 on the GPU) between vectors, a 3-D [8, 3, 4] and a [24, 12].
std::vector<GradTensor> repeated_shapes() {
  std::vector<GradTensor> tensors;
  size_t offset = 0;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    size_t numel = 1;
    for (int64_t extent : shape) numel *= size_t(extent);
    tensors.push_back({std::move(name), offset, numel, std::move(shape)});
    offset += numel + 5;
  };
  for (const char* block : {"a", "b", "c"}) {
    add(std::string(block) + ".weight", {16, 12});
    add(std::string(block) + ".bias", {16});
  }
  add("d.weight", {8, 3, 4});
  add("e.weight", {24, 12});
  return tensors;
}

// 16-byte aligned matrices with columns in multiples of 4 (the vectorized kernels, as ViT's): several slabs of
// rows, a matrix wider than one slab task (1100 columns), and one with more rows (4100) than Gram-Schmidt keeps
// in registers.
std::vector<GradTensor> aligned_shapes() {
  std::vector<GradTensor> tensors;
  size_t offset = 0;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    size_t numel = 1;
    for (int64_t extent : shape) numel *= size_t(extent);
    tensors.push_back({std::move(name), offset, numel, std::move(shape)});
    offset = (offset + numel + 63) / 64 * 64;
  };
  add("head.weight", {96, 64});
  add("head.bias", {96});
  add("fc.weight", {40, 1100});
  add("fc.bias", {40});
  add("tall.weight", {4100, 16});
  add("a.weight", {64, 96});
  add("b.weight", {64, 96});
  add("conv.weight", {40, 2, 12});
  return tensors;
}

TEST(PowerSgdCuda, MatchesTheCpuVersionOverSeveralSteps) {
  DDPX_REQUIRE_GPU();
  // fp32 on both sides with different summation orders (OpenBLAS vs the kernels, double vs float norms): 1e-4
  // for the small shapes; 5e-4 where rows of 1100 and columns of 4100 values are summed.
  for (const std::vector<GradTensor>& tensors : {ToyRegression().tensors(), repeated_shapes()})
    compare_powersgd_cpu_and_gpu(tensors, 1e-4);
  compare_powersgd_cpu_and_gpu(aligned_shapes(), 5e-4);
}

// Note [Low-rank gradients fused into the update]: run_leaving_wire() does run()'s work except the matrices' P Q^T
// writes. Over several steps (E carries over), with the same inputs: before the start step it returns nothing and
// the buckets are equal; from it on it returns pieces covering the bucket, the plain pieces of its bucket equal
// run()'s, the factor pieces keep the raw gradients, and evaluating a factor piece on the host (fmaf in order
// from 0, zero-padded to the width: low_rank_product) gives run()'s bucket values bit for bit. Note [Error
// feedback deferred to the next begin]: leaving factors leaves E's update to the next step, so a third hook that
// alternates (leaving on odd steps, run() on even ones) must match run() bit for bit too, after either kind.
TEST(PowerSgdCuda, RunLeavingWireLeavesExactlyRunsProductsInTheFactors) {
  DDPX_REQUIRE_GPU();
  const std::vector<GradTensor> tensors = aligned_shapes();
  const size_t end = tensors.back().offset + tensors.back().numel;
  SelfCommunicator comm(BufferMemory::cuda);
  // The bucket a leaving run left (`got`, its wire `wire`) against run()'s (`want`), for the same input.
  auto expect_leaves_runs_result = [&](const ReducedGradients& wire, const std::vector<float>& got,
                                       const std::vector<float>& want, const std::vector<float>& input,
                                       const std::string& where) {
    ASSERT_NE(wire.low_rank.pieces, nullptr) << where;
    ASSERT_EQ(wire.data, nullptr) << where;
    const LowRankGradients& lr = wire.low_rank;
    EXPECT_EQ(lr.width, 4) << where;
    std::vector<LowRankPiece> pieces(lr.count);
    CUDA_OK(cudaMemcpy(pieces.data(), lr.pieces, pieces.size() * sizeof(LowRankPiece), cudaMemcpyDeviceToHost));
    long long max_p = 0, max_q = 0, covered = 0;
    for (const LowRankPiece& piece : pieces) {
      EXPECT_EQ(piece.offset, covered) << where << ": pieces cover the bucket in order";
      covered = piece.offset + piece.numel;
      if (piece.rank == 0) continue;
      max_p = std::max(max_p, piece.p_offset + piece.numel / piece.cols * piece.rank);
      max_q = std::max(max_q, piece.q_offset + static_cast<long long>(piece.cols) * piece.rank);
    }
    EXPECT_EQ(covered, static_cast<long long>(end)) << where;
    std::vector<float> p(max_p), q(max_q);
    CUDA_OK(cudaMemcpy(p.data(), lr.p, p.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(q.data(), lr.q, q.size() * sizeof(float), cudaMemcpyDeviceToHost));
    size_t plain_differ = 0, raw_differ = 0, product_differ = 0, factor_elements = 0;
    for (const LowRankPiece& piece : pieces)
      for (long long e = 0; e < piece.numel; ++e) {
        const size_t at = static_cast<size_t>(piece.offset + e);
        if (piece.rank == 0) {
          plain_differ += got[at] != want[at];
          continue;
        }
        ++factor_elements;
        raw_differ += got[at] != input[at];
        const long long row = e / piece.cols, col = e % piece.cols;
        float sum = 0.f;
        for (int k = 0; k < lr.width; ++k) {
          const float pv = k < piece.rank ? p[piece.p_offset + row * piece.rank + k] : 0.f;
          const float qv = k < piece.rank ? q[piece.q_offset + col * piece.rank + k] : 0.f;
          sum = std::fmaf(pv, qv, sum);
        }
        product_differ += sum != want[at];
      }
    EXPECT_GT(factor_elements, end / 2) << where << ": the matrices are factor pieces";
    EXPECT_EQ(plain_differ, 0u) << where << ": vectors and padding as run() leaves them";
    EXPECT_EQ(raw_differ, 0u) << where << ": factor pieces keep the raw gradients";
    EXPECT_EQ(product_differ, 0u) << where << ": P Q^T evaluated from the factors equals run()'s bucket";
  };
  // Without warm start Q is redrawn (uploaded) every step while the deferred update still needs the old one.
  const std::pair<int64_t, bool> cases[] = {{3, true}, {4, true}, {4, false}};  // {rank, warm start}
  for (const auto& [rank, warm_start] : cases) {
    const PowerSgdOptions options{rank, 1, 2.0, warm_start, 5};
    PowerSgdHook writes(options), leaves(options), alternates(options);
    DeviceArray<float> a(end), b(end), c(end);
    for (int step = 0; step < 6; ++step) {
      const std::vector<float> input = random_values(end, 40 + uint64_t(step), 1.0);
      a.upload(input);
      b.upload(input);
      c.upload(input);
      BucketView a_view{0, a.data, 0, end, tensors, GradDevice::cuda}, b_view{0, b.data, 0, end, tensors,
                                                                              GradDevice::cuda};
      BucketView c_view{0, c.data, 0, end, tensors, GradDevice::cuda};
      ASSERT_TRUE(leaves.leaves_result_on_wire(b_view));
      writes.run(a_view, comm, nullptr, step);
      const ReducedGradients wire = leaves.run_leaving_wire(b_view, comm, nullptr, step);
      CUDA_OK(cudaDeviceSynchronize());
      const std::vector<float> want = a.download(), got = b.download();
      const std::string where = "rank " + std::to_string(rank) + (warm_start ? "" : " cold") + " step " +
                                std::to_string(step);
      if (step < 1) {
        EXPECT_EQ(wire.low_rank.pieces, nullptr) << where;
        EXPECT_EQ(got, want) << where;
      } else {
        expect_leaves_runs_result(wire, got, want, input, where);
      }
      if (step % 2 == 1) {
        const ReducedGradients alternate_wire = alternates.run_leaving_wire(c_view, comm, nullptr, step);
        CUDA_OK(cudaDeviceSynchronize());
        expect_leaves_runs_result(alternate_wire, c.download(), want, input, where + " (alternating, leaving)");
      } else {
        alternates.run(c_view, comm, nullptr, step);
        CUDA_OK(cudaDeviceSynchronize());
        EXPECT_EQ(c.download(), want) << where << " (alternating, run())";
      }
    }
  }
}

// Runs `steps` reducer steps on the GPU (NCCL, one rank, the given hook); with `capture_from` >= 0 the step
// of that index is captured once and replayed for it and every later step. Returns the buffer after each step.
std::vector<std::vector<float>> reduce_steps(const std::string& hook, int steps, int capture_from) {
  ToyRegression model;
  auto comm = one_rank_nccl();
  DeviceArray<float> grads(model.buffer_elems());
  cudaStream_t compute = nullptr;
  cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking);
  Reducer reducer(*comm, grads.data, model.buffer_elems(), model.tensors(),
                  BucketPlan(model.tensors(), BucketPlanOptions{1248, 208, 4}), make_comm_hook(hook),
                  ReducerOptions{true, GradDevice::cuda});
  auto one_step = [&] {
    reducer.begin_step(true, compute);
    const auto& t = model.tensors();
    for (size_t i = 0; i < t.size(); i += 2) reducer.mark_ready(t[i].offset, t[i + 1].offset + t[i + 1].numel);
    reducer.finish_step();
  };
  cudaGraphExec_t graph_exec = nullptr;
  std::vector<std::vector<float>> results;
  for (int step = 0; step < steps; ++step) {
    std::vector<float> input = random_values(model.buffer_elems(), 100 + uint64_t(step), 1.0);
    cudaMemcpyAsync(grads.data, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice, compute);
    if (capture_from < 0 || step < capture_from) {
      one_step();
    } else {
      if (!graph_exec) {
        cudaGraph_t graph = nullptr;
        EXPECT_EQ(cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal), cudaSuccess);
        one_step();
        EXPECT_EQ(cudaStreamEndCapture(compute, &graph), cudaSuccess);
        EXPECT_EQ(cudaGraphInstantiate(&graph_exec, graph, 0), cudaSuccess);
        cudaGraphDestroy(graph);
      }
      EXPECT_EQ(cudaGraphLaunch(graph_exec, compute), cudaSuccess);
    }
    cudaStreamSynchronize(compute);
    results.push_back(grads.download());
    if (capture_from >= 0 && step >= capture_from) {
      std::vector<BucketTiming> timings = reducer.bucket_timings();
      EXPECT_EQ(timings.size(), reducer.plan().size());
      for (const BucketTiming& t : timings) EXPECT_LE(t.start_ms, t.end_ms);
    }
  }
  if (graph_exec) cudaGraphExecDestroy(graph_exec);
  cudaStreamDestroy(compute);
  return results;
}

TEST(ReducerCuda, GraphCaptureEqualsEager) {
  DDPX_REQUIRE_GPU();
  for (const char* hook : {"allreduce", "bf16", "powersgd:2:1", "powersgd:3:1"}) {
    std::vector<std::vector<float>> eager = reduce_steps(hook, 5, -1);
    std::vector<std::vector<float>> captured = reduce_steps(hook, 5, 2);
    ASSERT_EQ(eager.size(), captured.size());
    for (size_t step = 0; step < eager.size(); ++step) EXPECT_EQ(eager[step], captured[step]) << hook << " step " << step;
  }
}

TEST(NcclOneRank, AbortMakesLaterCallsFail) {
  DDPX_REQUIRE_GPU();
  auto comm = one_rank_nccl();
  comm->abort("test");
  EXPECT_EQ(comm->async_error(), "aborted");
  DeviceArray<float> device(16);
  try {
    comm->all_reduce(device.data, 16, CommDType::f32, ReduceOp::avg, nullptr);
    FAIL() << "expected an error after abort";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "nccl backend, rank 0: all_reduce after the communicator was aborted");
  }
}

// A device backend whose all-reduce enqueues a host function on the stream; while `stall` is set that function
// blocks until abort() (a 60 s safety net keeps a broken test from hanging forever), stalling the stream the way
// a collective waiting for a dead peer does. It reports a world of two: in a world of one the allreduce hook
// issues no collective at all, and then nothing would stall.
class StallingCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  std::string backend_name() const override { return "stalling"; }
  BufferMemory buffer_memory() const override { return BufferMemory::cuda; }
  void all_reduce(void*, size_t, CommDType, ReduceOp, void* stream) override {
    DDPX_REQUIRE(!aborted(), "stalling backend: all_reduce after abort");
    DDPX_REQUIRE(cudaLaunchHostFunc(static_cast<cudaStream_t>(stream), &collective, this) == cudaSuccess,
                 "stalling backend: cudaLaunchHostFunc failed");
  }
  void broadcast(void*, size_t, CommDType, int, void*) override {}
  void all_gather(const void*, void*, size_t, CommDType, void*) override {}
  void barrier() override {}
  void abort(std::string_view) override {
    std::lock_guard lock(mutex_);
    ++aborts_;
    released_.notify_all();
  }
  bool aborted() {
    std::lock_guard lock(mutex_);
    return aborts_ > 0;
  }
  int aborts() {
    std::lock_guard lock(mutex_);
    return aborts_;
  }
  std::atomic<bool> stall{false};

 private:
  static void CUDART_CB collective(void* self) {
    auto* comm = static_cast<StallingCommunicator*>(self);
    if (!comm->stall) return;
    std::unique_lock lock(comm->mutex_);
    comm->released_.wait_for(lock, std::chrono::seconds(60), [comm] { return comm->aborts_ > 0; });
  }
  std::mutex mutex_;
  std::condition_variable released_;
  int aborts_ = 0;
};

using testing::error_of;

struct WatchedReducer {
  ToyRegression model;
  StallingCommunicator comm;
  CommWatchdog watchdog{comm, std::chrono::milliseconds(200)};
  DeviceArray<float> grads{model.buffer_elems()};
  cudaStream_t compute = nullptr;
  std::unique_ptr<Reducer> reducer;

  WatchedReducer() {
    cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking);
    reducer = std::make_unique<Reducer>(comm, grads.data, model.buffer_elems(), model.tensors(),
                                        BucketPlan(model.tensors(), BucketPlanOptions{1248, 208, 4}),
                                        make_comm_hook("allreduce"),
                                        ReducerOptions{true, GradDevice::cuda, nullptr, watchdog});
  }
  ~WatchedReducer() {
    reducer.reset();
    cudaStreamDestroy(compute);
  }
  void step() {
    reducer->begin_step(true, compute);
    const auto& t = model.tensors();
    for (size_t i = 0; i < t.size(); i += 2) reducer->mark_ready(t[i].offset, t[i + 1].offset + t[i + 1].numel);
    reducer->finish_step();
  }
};

TEST(WatchdogCuda, AStalledEagerStepIsAbortedAndReported) {
  DDPX_REQUIRE_GPU();
  WatchedReducer w;
  w.step();
  ASSERT_EQ(cudaStreamSynchronize(w.compute), cudaSuccess);
  w.comm.stall = true;
  w.step();  // enqueues and returns: nothing on the host waits for the collectives
  // Returns once the watchdog has aborted the communicator (which releases the stalled stream).
  ASSERT_EQ(cudaStreamSynchronize(w.compute), cudaSuccess);
  EXPECT_EQ(w.comm.aborts(), 1);
  const std::string expected =
      "rank 0: communication timed out after 0.2 s in bucket 0 of step 1 (a peer rank probably died or stalled)";
  EXPECT_EQ(w.watchdog.message(), expected);
  EXPECT_EQ(error_of([&] { w.reducer->begin_step(true, w.compute); }), expected);
}

TEST(WatchdogCuda, AStalledGraphReplayIsAbortedAndReported) {
  DDPX_REQUIRE_GPU();
  WatchedReducer w;
  w.step();  // synchronized step 0, eager (hooks may allocate in their first step)
  ASSERT_EQ(cudaStreamSynchronize(w.compute), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t replay = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(w.compute, cudaStreamCaptureModeRelaxed), cudaSuccess);
  w.step();  // step 1, captured: it runs (and is counted) at its first replay, as in the trainer
  ASSERT_EQ(cudaStreamEndCapture(w.compute, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&replay, graph, 0), cudaSuccess);
  EXPECT_EQ(w.reducer->synchronized_steps(), 1);
  // The captured step ran nothing: the watchdog armed by its launches must not time out on it.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(w.comm.aborts(), 0);
  auto replay_step = [&] {
    w.reducer->before_replay();
    ASSERT_EQ(cudaGraphLaunch(replay, w.compute), cudaSuccess);
    w.reducer->after_replay(w.compute);
  };
  replay_step();  // step 1: completes
  ASSERT_EQ(cudaStreamSynchronize(w.compute), cudaSuccess);
  EXPECT_EQ(w.comm.aborts(), 0);
  w.comm.stall = true;
  replay_step();  // step 2: its host-function node stalls the stream
  ASSERT_EQ(cudaStreamSynchronize(w.compute), cudaSuccess);
  EXPECT_EQ(w.comm.aborts(), 1);
  const std::string expected =
      "rank 0: communication timed out after 0.2 s in step 2 (a peer rank probably died or stalled)";
  EXPECT_EQ(w.watchdog.message(), expected);
  EXPECT_EQ(error_of([&] { w.reducer->before_replay(); }), expected);
  EXPECT_EQ(w.reducer->synchronized_steps(), 3);
  cudaGraphExecDestroy(replay);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace ddpx
