// data-bench's measurement (data/loader_throughput.hpp): every image counted was made, on the threads asked for, and
// the CPU time it took is stated: positive, and the work of T threads is counted across all of them.
#include <gtest/gtest.h>

#include <filesystem>

#include "data/data_spec.hpp"
#include "data/dataset.hpp"
#include "data/loader_throughput.hpp"

namespace ddpx {
namespace {

TEST(LoaderThroughput, CountsTheImagesMadeAndTheCpuTimeTheyTook) {
  const std::string fashion = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(fashion + "/t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  DatasetContext context;
  context.shape = DataShape{1, 28, 10};
  context.images.auto_augment = parse_rand_augment("2,9");  // some work per image
  const std::unique_ptr<Dataset> dataset = make_dataset(parse_data_spec("idx:" + fashion + ":test", DataOrigin::train_data), context);
  for (int threads : {1, 2}) {
    const Throughput t = measure_batches(*dataset, threads, 32, 1000);
    EXPECT_EQ(t.images, 1024);  // whole micro-batches: 32 of 32
    EXPECT_GT(t.seconds, 0);
    EXPECT_GT(t.cpu_seconds, 0);
    EXPECT_GT(t.core_us_per_image(), 0);
    EXPECT_GT(t.per_second(), 0);
  }
}

}  // namespace
}  // namespace ddpx
