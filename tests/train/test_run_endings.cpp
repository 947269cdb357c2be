// How a run ends when it is restarted or stopped: --resume auto on a finished run exits 0 saying it is complete
// (a requeued job succeeds), a raised --steps continues from the checkpoint; SIGINT and SIGTERM print one line with
// the step reached, the newest checkpoint and the command that continues, and keep their exit status (130, 143); a
// killed and resumed run's report names both attempts and its --metrics file holds every step once.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli_runner.hpp"
#include "train/interrupt_notice.hpp"
#include "train/run_settings.hpp"

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

TEST(RunEndings, AttemptsFromTheirStartSteps) {
  EXPECT_EQ(attempt_starts_after({}, 0), (std::vector<int64_t>{0}));
  EXPECT_EQ(attempt_starts_after({}, 4), (std::vector<int64_t>{0, 4}));  // a checkpoint that recorded none
  EXPECT_EQ(attempt_starts_after({0, 4}, 8), (std::vector<int64_t>{0, 4, 8}));
  const std::vector<RunAttempt> attempts = run_attempts({0, 4}, 10);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0], (RunAttempt{0, 4, "stopped; the next attempt resumed from its checkpoint at step 4"}));
  EXPECT_EQ(attempts[1], (RunAttempt{4, 10, "finished"}));
}

// Killed (SIGKILL) as step 7 begins, with step 4's checkpoint the newest committed, then resumed: the report names
// both attempts (it used to cover only the resumed part), `ddpx report` prints them, and --metrics has each step once
// (the killed attempt's step 6 was written twice).
TEST(RunEndings, AKilledAndResumedRunsReportNamesBothAttemptsAndItsMetricsEachStepOnce) {
  const fs::path dir = testing::fresh_dir("train", "attempts");
  const std::string run = kRun + " --ddp --steps 10 --log-every 2 --checkpoint-every 2 --resume auto --checkpoint-dir " +
                          (dir / "ck").string() + " --metrics " + (dir / "m.jsonl").string() + " --report " +
                          (dir / "r.json").string();
  const testing::CliResult killed = run_ddpx(run, "DDPX_TEST_FAULT=step-7:0:kill");
  ASSERT_EQ(killed.status, 128 + 9) << killed.output;
  const testing::CliResult resumed = run_ddpx(run);
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  const nlohmann::json report = nlohmann::json::parse(std::ifstream(dir / "r.json"));
  ASSERT_EQ(report["attempts"].size(), 2u) << report.dump();
  EXPECT_EQ(report["attempts"][0]["start_step"], 0);
  EXPECT_EQ(report["attempts"][0]["end_step"], 4);
  EXPECT_EQ(report["attempts"][1]["start_step"], 4);
  EXPECT_EQ(report["attempts"][1]["end_step"], 10);
  EXPECT_EQ(report["attempts"][1]["reason"], "finished");
  const testing::CliResult shown = run_ddpx("report " + (dir / "r.json").string());
  EXPECT_NE(shown.output.find("attempts: 2 (steps 1-4: stopped; the next attempt resumed from its checkpoint at step "
                              "4; steps 5-10: finished)"), std::string::npos) << shown.output;
  std::vector<int64_t> steps;
  std::ifstream metrics(dir / "m.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const nlohmann::json object = nlohmann::json::parse(line);
    if (object["kind"] == "step") steps.push_back(object["step"]);
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 4, 5, 6, 8, 10}));
}

}  // namespace
}  // namespace ddpx
