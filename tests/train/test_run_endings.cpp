// How a run ends when it is restarted or stopped: --resume auto on a finished run exits 0 saying it is complete
// (a requeued job succeeds), a raised --steps continues from the checkpoint; SIGINT and SIGTERM print one line with
// the step reached, the newest checkpoint and the command that continues, and keep their exit status (130, 143).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.hpp"
#include "train/interrupt_notice.hpp"

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

TEST(RunEndings, ContinueCommandAddsResumeAutoAndQuotes) {
  EXPECT_EQ(continue_command({"ddpx", "train", "--checkpoint-dir", "my dir"}, false, true),
            "ddpx train --checkpoint-dir 'my dir' --resume auto");
  EXPECT_EQ(continue_command({"ddpx", "train", "--resume", "auto"}, true, true), "ddpx train --resume auto");
  EXPECT_EQ(continue_command({"ddpx", "train"}, false, false), "");
}

// The step-K fault point sits in the reducer's port (--ddp at one rank): the signal arrives as step 7 begins, when
// step 6 is done and step 4's checkpoint is the newest committed (step 6's waits for step 7's loss).
TEST(RunEndings, SigintAndSigtermSayWhereTheRunStoppedAndHowToContinue) {
  for (const auto& [kind, status, word] : {std::tuple{"sigint", 130, "interrupted (SIGINT)"},
                                           std::tuple{"sigterm", 143, "stopped (SIGTERM)"}}) {
    const fs::path ckpt = testing::fresh_dir("train", std::string("stopped_") + kind);
    const testing::CliResult r =
        run_ddpx(kRun + " --ddp --steps 20 --checkpoint-every 2 --checkpoint-dir " + ckpt.string(),
                 std::string("DDPX_TEST_FAULT=step-7:0:") + kind);
    EXPECT_EQ(r.status, status) << r.output;
    EXPECT_NE(r.output.find(word), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("step 6 of 20 done; newest checkpoint: " + ckpt.string() + " (step 4)"),
              std::string::npos) << r.output;
    EXPECT_NE(r.output.find("continue with: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("--checkpoint-dir " + ckpt.string() + " --resume auto"), std::string::npos) << r.output;
  }
  const testing::CliResult none = run_ddpx(kRun + " --ddp --steps 20", "DDPX_TEST_FAULT=step-3:0:sigint");
  EXPECT_EQ(none.status, 130) << none.output;
  EXPECT_NE(none.output.find("step 2 of 20 done; no checkpoint (no --checkpoint-dir)"), std::string::npos)
      << none.output;
}

}  // namespace
}  // namespace ddpx
