// The start-up agreement of `ddpx train`: what the settings table holds, how data files are fingerprinted
// (without blocking on a FIFO), the DDPX_TEST_FAULT parser, and, end to end under mpirun with a different command
// line per rank, that ranks disagreeing on --steps, the resume step, --lr or --save stop at once with one message
// naming the setting and both values instead of hanging until the watchdog.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.hpp"
#include "core/test_fault.hpp"
#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_config.hpp"
#include "train/startup_settings.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;

std::string value_of(const std::vector<AgreedSetting>& settings, const std::string& name) {
  auto it = std::find_if(settings.begin(), settings.end(), [&](const AgreedSetting& s) { return s.name == name; });
  return it == settings.end() ? "(absent)" : it->value;
}

TEST(StartupSettings, HoldEverythingThatChangesTheMathOrTheSchedule) {
  TrainOptions options;
  options.model = "vit_tiny_test";
  options.steps = 40;
  options.optimizer.lr = 0.1f;
  options.optimizer.eps = 1e-8f;
  options.optimizer.nesterov = true;
  options.save = "w.safetensors";
  const VitLayout layout(parse_vit_spec(options.model));
  const auto settings = startup_settings(options, layout, 12, "allreduce", "plan");
  EXPECT_EQ(value_of(settings, "--steps"), "40");
  EXPECT_EQ(value_of(settings, "the step to start from (--resume)"), "12");
  EXPECT_EQ(value_of(settings, "--lr"), "0.1");
  EXPECT_EQ(value_of(settings, "--eps"), "1e-08");
  EXPECT_EQ(value_of(settings, "--nesterov"), "set");
  EXPECT_EQ(value_of(settings, "--save"), "given");
  EXPECT_EQ(value_of(settings, "--checkpoint-dir"), "not given");
  EXPECT_EQ(value_of(settings, "--report"), "not given");  // issue 37 item 9: on one rank only it was silent
  EXPECT_EQ(value_of(settings, "--trace"), "not given");
  EXPECT_EQ(value_of(settings, "--images"), "none");
  EXPECT_EQ(value_of(settings, "--comm-hook"), "allreduce");
  // Not in the table: settings ranks may differ in without changing results.
  EXPECT_EQ(value_of(settings, "--workers"), "(absent)");
  EXPECT_EQ(value_of(settings, "--log-every"), "(absent)");
}

TEST(StartupSettings, FingerprintsDataFilesWithoutBlocking) {
  const fs::path dir = testing::fresh_dir("fingerprint");
  const fs::path a = dir / "a.npy", b = dir / "b.npy", fifo = dir / "fifo.npy";
  std::string bytes(200000, 'x');
  std::ofstream(a, std::ios::binary) << bytes;
  bytes.back() = 'y';
  std::ofstream(b, std::ios::binary) << bytes;
  const std::string fa = file_fingerprint(a.string());
  EXPECT_EQ(fa.rfind("200000 bytes, fingerprint ", 0), 0u) << fa;
  EXPECT_EQ(file_fingerprint(a.string()), fa);
  EXPECT_NE(file_fingerprint(b.string()), fa);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(file_fingerprint(fifo.string()), "not a regular file");  // returns at once: nobody writes to it
  EXPECT_EQ(file_fingerprint((dir / "missing.npy").string()), "missing or unreadable: No such file or directory");
  fs::remove_all(dir);
}

TEST(TestFaultHook, ParsesPhaseOccurrenceRankKindAndSeconds) {
  using test_fault_detail::parse;
  const auto spec = parse("write-checkpoint.safetensors@2:1:slow:5");
  EXPECT_EQ(spec.error, "");
  EXPECT_EQ(spec.phase, "write-checkpoint.safetensors");
  EXPECT_EQ(spec.occurrence, 2);
  EXPECT_EQ(spec.rank, 1);
  EXPECT_EQ(spec.kind, "slow");
  EXPECT_EQ(spec.seconds, 5u);
  EXPECT_FALSE(parse("").active);
  for (const char* bad : {"agreement", "agreement:1", "agreement:x:kill", "agreement:1:explode", "a@0:1:kill",
                          "agreement:1:slow:-3"})
    EXPECT_NE(parse(bad).error.find("is not PHASE[@N]:RANK:KIND[:SECONDS]"), std::string::npos) << bad;
}

// `mpirun -np 1 ddpx train A : -np 1 ddpx train B`: rank 0 runs A, rank 1 runs B.
testing::CliResult run_two_ranks(const std::string& rank0_args, const std::string& rank1_args) {
  std::string mpirun = "mpirun --oversubscribe";
  if (::geteuid() == 0) mpirun += " --allow-run-as-root";
  const std::string common = " train --device cpu --model vit_tiny_test --batch 2 --workers 1 --comm-timeout 60 ";
  const std::string binary = DDPX_BINARY;
  const std::string command = "env -u RANK -u WORLD_SIZE -u DDPX_TEST_FAULT OMPI_ALLOW_RUN_AS_ROOT=1 "
                              "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 " + mpirun + " -np 1 " + binary + common +
                              rank0_args + " : -np 1 " + binary + common + rank1_args + " 2>&1";
  testing::CliResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 512> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe)) result.output += buffer.data();
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

void expect_refused(const testing::CliResult& run, const std::string& message) {
  EXPECT_NE(run.status, 0) << run.output;
  EXPECT_NE(run.output.find(message), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("timed out"), std::string::npos) << run.output;  // refused at once, not a hang
}

TEST(StartupAgreement, RanksDisagreeingOnTheScheduleOrTheMathStopAtOnceNamingBothValues) {
  expect_refused(run_two_ranks("--steps 5", "--steps 6"), "ranks disagree on --steps: rank 0 has '5', rank 1 has '6'");
  expect_refused(run_two_ranks("--steps 3 --lr 0.01", "--steps 3 --lr 0.1"),
                 "ranks disagree on --lr: rank 0 has '0.01', rank 1 has '0.1'");
  const fs::path dir = testing::fresh_dir("agreement_save");
  const std::string save = (dir / "w.safetensors").string();
  expect_refused(run_two_ranks("--steps 3", "--steps 3 --save " + save),
                 "ranks disagree on --save: rank 0 has 'not given', rank 1 has 'given'");
  EXPECT_FALSE(fs::exists(save));
  fs::remove_all(dir);
}

TEST(StartupAgreement, RanksResumingFromDifferentStepsStopAtOnce) {
  const fs::path dir = testing::fresh_dir("agreement_resume");
  for (int steps : {2, 4}) {
    const testing::CliResult made = testing::run_ddpx(
        "train --device cpu --model vit_tiny_test --batch 2 --workers 1 --quiet --steps " + std::to_string(steps) +
        " --checkpoint-dir " + (dir / std::to_string(steps)).string());
    ASSERT_EQ(made.status, 0) << made.output;
  }
  expect_refused(run_two_ranks("--steps 6 --resume " + (dir / "2").string(), "--steps 6 --resume " + (dir / "4").string()),
                 "ranks disagree on the step to start from (--resume): rank 0 has '2', rank 1 has '4'");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
