// GPU tests (skip without a GPU; run on the GPU machine with world size 1):
//  - NCCL with one rank: collectives on device buffers, agreement over it;
//  - CastHook's CUDA kernels == the CPU casts, bit for bit;
//  - PowerSGD on the GPU == PowerSGD on the CPU over several steps (error feedback and warm start included);
//  - a reducer step captured into a CUDA graph and replayed == the same steps run eagerly.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.hpp"
#include "ddp/cast_hook.hpp"
#include "ddp/cast_kernels.hpp"
#include "ddp/powersgd_hook.hpp"
#include "ddp/reducer.hpp"
#include "dist/agreement.hpp"
#include "dist/nccl_communicator.hpp"
#include "dist/self_communicator.hpp"
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
  for (WireFormat format : {WireFormat::fp16, WireFormat::bf16}) {
    std::vector<uint16_t> cpu_narrow(values.size());
    std::vector<float> cpu_widened(values.size());
    scale_to_wire_format(values.data(), cpu_narrow.data(), values.size(), 0.25f, format);
    widen_from_wire_format(cpu_narrow.data(), cpu_widened.data(), values.size(), format);
    launch_scale_to_wire_format(input.data, narrow.data, values.size(), 0.25f, format, nullptr);
    launch_widen_from_wire_format(narrow.data, widened.data, values.size(), format, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(narrow.download(), cpu_narrow);
    EXPECT_EQ(widened.download(), cpu_widened);
  }
}

void compare_powersgd_cpu_and_gpu(const std::vector<GradTensor>& tensors) {
  const size_t end = tensors.back().offset + tensors.back().numel;
  SelfCommunicator host_comm(BufferMemory::host), device_comm(BufferMemory::cuda);
  for (int64_t rank : {1, 3}) {
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
      // fp32 on both sides with different summation orders (OpenBLAS vs cuBLAS, double vs float norms): 1e-4.
      EXPECT_LT(worst, 1e-4) << "rank " << rank << " step " << step;
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

TEST(PowerSgdCuda, MatchesTheCpuVersionOverSeveralSteps) {
  DDPX_REQUIRE_GPU();
  for (const std::vector<GradTensor>& tensors : {ToyRegression().tensors(), repeated_shapes()})
    compare_powersgd_cpu_and_gpu(tensors);
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
  for (const char* hook : {"allreduce", "bf16", "powersgd:2:1"}) {
    std::vector<std::vector<float>> eager = reduce_steps(hook, 5, -1);
    std::vector<std::vector<float>> captured = reduce_steps(hook, 5, 2);
    ASSERT_EQ(eager.size(), captured.size());
    for (size_t step = 0; step < eager.size(); ++step) EXPECT_EQ(eager[step], captured[step]) << hook << " step " << step;
  }
}

}  // namespace
}  // namespace ddpx
