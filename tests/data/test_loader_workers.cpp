// choose_loader_workers: --workers wins; GPU ranks get half their share of the CPUs (1..16); CPU ranks get 2.
#include <gtest/gtest.h>

#include "data/loader_workers.hpp"

namespace ddpx {
namespace {

TEST(LoaderWorkers, AnExplicitRequestWins) {
  EXPECT_EQ(choose_loader_workers(3, true, 128, 1).workers, 3);
  EXPECT_EQ(choose_loader_workers(3, false, 2, 4).workers, 3);
  EXPECT_EQ(choose_loader_workers(3, true, 128, 1).source, "--workers");
}

TEST(LoaderWorkers, GpuRanksGetHalfOfTheirShareOfTheCpus) {
  EXPECT_EQ(choose_loader_workers(0, true, 16, 1).workers, 8);   // the one-H200 machine
  EXPECT_EQ(choose_loader_workers(0, true, 128, 8).workers, 8);  // an 8-GPU node
  EXPECT_EQ(choose_loader_workers(0, true, 32, 2).workers, 8);
  EXPECT_EQ(choose_loader_workers(0, true, 16, 1).source, "16 CPUs / 1 rank on this node / 2");
}

TEST(LoaderWorkers, GpuRanksGetAtLeastOneAndAtMostSixteen) {
  EXPECT_EQ(choose_loader_workers(0, true, 2, 8).workers, 1);
  EXPECT_EQ(choose_loader_workers(0, true, 0, 0).workers, 1);  // unknown CPUs and ranks: still one
  EXPECT_EQ(choose_loader_workers(0, true, 256, 1).workers, 16);
  EXPECT_EQ(choose_loader_workers(0, true, 256, 1).source, "256 CPUs / 1 rank on this node / 2, at most 16");
}

TEST(LoaderWorkers, CpuRanksGetTwo) {
  EXPECT_EQ(choose_loader_workers(0, false, 64, 1).workers, 2);
  EXPECT_EQ(choose_loader_workers(0, false, 2, 4).workers, 2);
}

}  // namespace
}  // namespace ddpx
