// How a run ends when it is restarted: --resume auto on a finished run exits 0 saying it is complete (a requeued job
// succeeds), a raised --steps continues from the checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::run_ddpx;

const std::string kRun = "train --device cpu --model mlp_tiny_test --data learnable --batch 4 --warmup 0 --workers 1";

TEST(RunEndings, ResumeAutoOnAFinishedRunSaysCompleteAndExitsZero) {
  const fs::path ckpt = testing::fresh_dir("train", "finished_run");
  const std::string run = kRun + " --checkpoint-dir " + ckpt.string() + " --resume auto";
  const testing::CliResult first = run_ddpx(run + " --steps 4");
  ASSERT_EQ(first.status, 0) << first.output;
  const testing::CliResult again = run_ddpx(run + " --steps 4");
  EXPECT_EQ(again.status, 0) << again.output;  // was exit 2, "raise --steps"
  EXPECT_NE(again.output.find("the run is complete"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("holds step 4"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("step      1/4"), std::string::npos) << again.output;
  const testing::CliResult longer = run_ddpx(run + " --steps 6");
  ASSERT_EQ(longer.status, 0) << longer.output;
  EXPECT_NE(longer.output.find("at step 4"), std::string::npos) << longer.output;
  EXPECT_NE(longer.output.find("step      6/6"), std::string::npos) << longer.output;
}

}  // namespace
}  // namespace ddpx
