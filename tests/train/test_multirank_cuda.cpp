// ddpx's data-parallel NCCL path at world 2, GPU-labelled: it runs where two GPUs are visible, or on one GPU whose
// ranks share it through NCCL 2.30+ (--ranks-per-gpu, shared_gpu_ranks.hpp), and skips naming both ways elsewhere.
// Every communication hook trains at world 2 (the CUDA reducer's buckets, fp16/bf16 compression, PowerSGD's
// low-rank rounds and error feedback across ranks), and a rank killed or stopped mid-run ends the job within
// --comm-timeout, named (the watchdog over NCCL). Two ranks equal one with the whole batch is
// test_family_properties_cuda.cpp's.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <signal.h>

#include <regex>
#include <string>

#include "cli_runner.hpp"
#include "shared_gpu_ranks.hpp"
#include "signalled_rank.hpp"

namespace ddpx {
namespace {

// The loss at the start and the end of a run, from its summary line ("loss 6.9078 -> 6.9226").
std::pair<double, double> summary_loss(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex(R"(loss ([0-9.]+) -> ([0-9.]+))"))) return {0, 0};
  return {std::stod(m[1]), std::stod(m[2])};
}

TEST(CudaRanks, EveryCommHookTrainsAtWorldTwo) {
  DDPX_REQUIRE_GPU_RANKS(two, 2);
  for (const char* hook : {"allreduce", "fp16", "bf16", "powersgd:1", "powersgd:2:3"}) {
    const testing::CliResult r = testing::run_cli(fmt::format(
        "train --device cuda --model vit_tiny_test --precision bf16 --data learnable --batch 8 --steps 40 "
        "--warmup 0 --workers 1 --lr 0.05 --momentum 0.9 --ddp --comm-hook {} --nproc-per-node 2 --comm-timeout 60{}",
        hook, two.flags));
    ASSERT_EQ(r.status, 0) << hook << "\n" << r.output;
    EXPECT_NE(r.output.find("2 rank(s)"), std::string::npos) << hook << "\n" << r.output;
    const auto [first, last] = summary_loss(r.output);
    EXPECT_GT(first, 0) << hook << ": no summary line\n" << r.output;
    EXPECT_LT(last, first) << hook << ": the loss did not fall at world 2\n" << r.output;
  }
}

TEST(CudaRanks, AKilledRankEndsTheJobAndIsNamed) {
  DDPX_REQUIRE_GPU_RANKS(two, 2);
  testing::expect_signalled_rank_ends_the_job("--device cuda --model vit_tiny_test --batch 2" + two.flags,
                                              "nccl_signal", 10, SIGKILL,
                                              {"ddpx launch: rank 1 was killed by signal 9"});
}

TEST(CudaRanks, AStoppedRankEndsTheJob) {
  DDPX_REQUIRE_GPU_RANKS(two, 2);
  // Rank 0's watchdog (--comm-timeout) aborts its NCCL communicator and fails the rank; the launcher then ends
  // the job, the stopped rank included.
  testing::expect_signalled_rank_ends_the_job("--device cuda --model vit_tiny_test --batch 2" + two.flags,
                                              "nccl_signal", 10, SIGSTOP,
                                              {"ddpx launch: rank 0 exited with status 2 first: ddpx: error: "});
}

}  // namespace
}  // namespace ddpx
