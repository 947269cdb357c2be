// core/kernel_launch.cuh on the GPU: a kernel launched with launch_after_producer() that begins with
// begin_after_producer() sees every write of the kernel before it, even when that kernel lets it be placed at
// once and writes only after a long wait (eagerly and replayed from a CUDA graph); a consumer that skips the wait
// is placed early and reads stale values (evidence that the launches do overlap here), and is not with
// DDPX_PDL=0; a failed launch names the kernel. All assertions are on values, none on times.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/kernel_launch.cuh"
#include "gpu_guard.hpp"

namespace ddpx {
namespace {

constexpr int kBlocks = 8, kThreads = 128, kCount = kBlocks * kThreads;
constexpr long long kSpinCycles = 2'000'000;  // about 1 ms at H200 clocks: a wide window for an early consumer

// Lets the next kernel be placed at once, then writes `value` everywhere only after spinning.
__global__ void slow_producer(int* data, int value) {
  begin_after_producer();
  const long long start = clock64();
  while (clock64() - start < kSpinCycles) {
  }
  data[blockIdx.x * blockDim.x + threadIdx.x] = value;
}

__global__ void waiting_consumer(const int* data, int* copy) {
  begin_after_producer();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  copy[i] = data[i];
}

// Breaks the contract on purpose: reads before waiting.
__global__ void impatient_consumer(const int* data, int* copy) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  copy[i] = data[i];
  wait_for_producer();
}

struct Buffers {
  int* data = nullptr;
  int* copy = nullptr;
  Buffers() {
    DDPX_CUDA_CHECK(cudaMalloc(&data, kCount * sizeof(int)));
    DDPX_CUDA_CHECK(cudaMalloc(&copy, kCount * sizeof(int)));
    DDPX_CUDA_CHECK(cudaMemset(data, 0, kCount * sizeof(int)));
  }
  ~Buffers() {
    cudaFree(data);
    cudaFree(copy);
  }
  std::vector<int> copied() const {
    std::vector<int> host(kCount);
    DDPX_CUDA_CHECK(cudaMemcpy(host.data(), copy, kCount * sizeof(int), cudaMemcpyDeviceToHost));
    return host;
  }
};

int count_equal(const std::vector<int>& values, int want) {
  int n = 0;
  for (int v : values) n += v == want;
  return n;
}

TEST(KernelLaunch, WaitingConsumerSeesEveryWriteOfASlowProducer) {
  DDPX_REQUIRE_GPU();
  Buffers b;
  cudaStream_t stream = nullptr;
  DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int round = 1; round <= 4; ++round) {
    launch_after_producer("slow_producer", slow_producer, kBlocks, kThreads, 0, stream, b.data, round);
    launch_after_producer("waiting_consumer", waiting_consumer, kBlocks, kThreads, 0, stream, b.data, b.copy);
    DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
    EXPECT_EQ(count_equal(b.copied(), round), kCount) << "eager round " << round;
  }
  // The same pair captured into a graph (programmatic edges) and replayed.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  DDPX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  launch_after_producer("slow_producer", slow_producer, kBlocks, kThreads, 0, stream, b.data, 77);
  launch_after_producer("waiting_consumer", waiting_consumer, kBlocks, kThreads, 0, stream, b.data, b.copy);
  DDPX_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  DDPX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    DDPX_CUDA_CHECK(cudaMemsetAsync(b.data, 0, kCount * sizeof(int), stream));
    DDPX_CUDA_CHECK(cudaMemsetAsync(b.copy, 0, kCount * sizeof(int), stream));
    DDPX_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
    EXPECT_EQ(count_equal(b.copied(), 77), kCount) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// With DDPX_PDL=0 (ctest runs this binary a second time so: KernelLaunch.DisabledByEnvironment) the same launches
// keep plain stream order, and the impatient consumer reads the new values.
TEST(KernelLaunch, ConsumerIsPlacedBeforeItsProducerFinishesUnlessDisabled) {
  DDPX_REQUIRE_GPU();
  int device = 0, major = 0;
  DDPX_CUDA_CHECK(cudaGetDevice(&device));
  DDPX_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major < 9) GTEST_SKIP() << "programmatic dependent launch needs sm_90 or later";
  Buffers b;
  cudaStream_t stream = nullptr;
  DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Each kernel runs once first: loading a kernel on its first launch (CUDA's lazy module loading) waits for the
  // work in flight, which would serialize the pair below.
  launch_kernel("slow_producer", false, slow_producer, kBlocks, kThreads, 0, stream, b.data, 0);
  launch_kernel("impatient_consumer", false, impatient_consumer, kBlocks, kThreads, 0, stream, b.data, b.copy);
  DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
  launch_after_producer("slow_producer", slow_producer, kBlocks, kThreads, 0, stream, b.data, 5);
  launch_after_producer("impatient_consumer", impatient_consumer, kBlocks, kThreads, 0, stream, b.data, b.copy);
  DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (programmatic_launch_enabled()) {
    // Placed while the producer spins, every read sees the old zeros; had the launch not overlapped, none would.
    EXPECT_EQ(count_equal(b.copied(), 0), kCount);
  } else {
    EXPECT_EQ(count_equal(b.copied(), 5), kCount) << "DDPX_PDL=0, yet the launches overlapped";
  }
  // Without overlap the same impatient consumer waits for the whole producer, so it reads the new values.
  launch_kernel("slow_producer", false, slow_producer, kBlocks, kThreads, 0, stream, b.data, 6);
  launch_kernel("impatient_consumer", false, impatient_consumer, kBlocks, kThreads, 0, stream, b.data, b.copy);
  DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
  EXPECT_EQ(count_equal(b.copied(), 6), kCount);
  cudaStreamDestroy(stream);
}

TEST(KernelLaunch, FailedLaunchNamesTheKernelAndItsShape) {
  DDPX_REQUIRE_GPU();
  Buffers b;
  try {
    launch_after_producer("waiting_consumer", waiting_consumer, 1, 4096, 0, nullptr, b.data, b.copy);
    FAIL() << "a 4096-thread block was launched";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("waiting_consumer"), std::string::npos) << what;
    EXPECT_NE(what.find("block 4096x1x1"), std::string::npos) << what;
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // the failure does not linger for the next launch check
}

}  // namespace
}  // namespace ddpx
