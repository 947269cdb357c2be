// Loader threads near their GPU (data/loader_affinity.hpp): the host-side choice of cores (the GPU's near cores
// this process may use, else none and the reason), the process's mask as sched_getaffinity gives it, a pinned
// thread's mask, and the batch loader's workers on the cores they are given (or the process's mask without any).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <mutex>
#include <thread>

#include "data/batch_loader.hpp"
#include "data/loader_affinity.hpp"
#include "data/synthetic_dataset.hpp"

namespace ddpx {
namespace {

TEST(LoaderAffinity, TheGpusNearCoresThisProcessMayUse) {
  const std::vector<int> allowed = {0, 1, 2, 3, 4, 5, 6, 7, 16, 17};
  const LoaderCores near = choose_loader_cores(allowed, {4, 5, 6, 7, 8, 9, 16, 17, 18}, "0000:19:00.0");
  EXPECT_EQ(near.cores, (std::vector<int>{4, 5, 6, 7, 16, 17}));
  EXPECT_EQ(near.source, "pinned to 6 cores near GPU 0000:19:00.0 (4-7,16-17)");
  const LoaderCores outside = choose_loader_cores({0, 1}, {8, 9, 10}, "0000:19:00.0");
  EXPECT_TRUE(outside.cores.empty());
  EXPECT_EQ(outside.source,
            "not pinned: none of the cores near GPU 0000:19:00.0 (8-10) is in this process's mask (0-1)");
  const LoaderCores unknown = choose_loader_cores(allowed, {}, "0000:19:00.0");
  EXPECT_TRUE(unknown.cores.empty());
  EXPECT_NE(unknown.source.find("not pinned: the cores near GPU 0000:19:00.0 are unknown"), std::string::npos);
  const LoaderCores cpu = choose_loader_cores(allowed, {0, 1}, "");
  EXPECT_TRUE(cpu.cores.empty());
  EXPECT_EQ(cpu.source, "not pinned (no GPU)");
}

TEST(LoaderAffinity, AllowedCoresAreTheProcessMaskAndAPinnedThreadKeepsToItsCores) {
  const std::vector<int> allowed = allowed_cores();
  ASSERT_FALSE(allowed.empty());
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  EXPECT_EQ(static_cast<int>(allowed.size()), CPU_COUNT(&mask));
  for (const int core : allowed) EXPECT_TRUE(CPU_ISSET(core, &mask)) << core;
  std::vector<int> seen;
  std::thread([&] {
    pin_this_thread({allowed.back()});
    cpu_set_t own;
    CPU_ZERO(&own);
    pthread_getaffinity_np(pthread_self(), sizeof(own), &own);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &own)) seen.push_back(cpu);
  }).join();
  EXPECT_EQ(seen, std::vector<int>{allowed.back()});
  // No GPU here: a bus id hwloc does not know has no near cores (and nothing is pinned for it).
  EXPECT_TRUE(gpu_local_cores("0000:ff:1f.7").empty());
  EXPECT_TRUE(gpu_local_cores("").empty());
}

// A dataset that records the CPU mask of the threads that fill its batches.
class MaskRecordingDataset : public SyntheticDataset {
 public:
  MaskRecordingDataset() : SyntheticDataset(DataShape{1, 2, 2}, 1, false) {}
  void fill_batch(int64_t step, int rank, int world, int64_t batch, float* images, int32_t* labels) const override {
    cpu_set_t own;
    CPU_ZERO(&own);
    pthread_getaffinity_np(pthread_self(), sizeof(own), &own);
    std::vector<int> cores;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &own)) cores.push_back(cpu);
    {
      std::lock_guard lock(mutex_);
      masks_.push_back(cores);
    }
    SyntheticDataset::fill_batch(step, rank, world, batch, images, labels);
  }
  std::vector<std::vector<int>> masks() const {
    std::lock_guard lock(mutex_);
    return masks_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::vector<std::vector<int>> masks_;
};

TEST(LoaderAffinity, TheLoadersWorkersRunOnTheirCoresAndUnpinnedOnTheProcessMask) {
  const std::vector<int> allowed = allowed_cores();
  ASSERT_FALSE(allowed.empty());
  for (const bool pinned : {true, false}) {
    MaskRecordingDataset data;
    BatchLoader::Options options;
    options.workers = 2;
    options.depth = 3;
    if (pinned) options.cores = {allowed.front()};
    {
      BatchLoader loader(data, 0, 1, 2, 0, options);
      for (int step = 0; step < 4; ++step) loader.release(loader.acquire());
    }
    const std::vector<std::vector<int>> masks = data.masks();
    ASSERT_GE(masks.size(), 4u);
    for (const std::vector<int>& mask : masks)
      EXPECT_EQ(mask, pinned ? std::vector<int>{allowed.front()} : allowed) << (pinned ? "pinned" : "unpinned");
  }
}

}  // namespace
}  // namespace ddpx
