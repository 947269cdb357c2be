// A newcomer's commonest slips on the real ddpx binary (cli/suggest.hpp and the checks they reach): a mistyped
// command or flag gets "did you mean", a missing command the list of commands, a number with a unit names the
// flag and the plain number, a missing file names its flag, --resume auto starts afresh on an empty folder, and
// a trace given to `ddpx report` says to use --check-trace. Every case exits 2 (a user error).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/suggest.hpp"
#include "cli/torchvision_flags.hpp"
#include "cli_runner.hpp"
#include "core/exit_status.hpp"

namespace ddpx {
namespace {

using cli::closest_name;
using cli::edit_distance;
using testing::run_ddpx;

void expect_user_error(const testing::CliResult& r, const std::string& message) {
  EXPECT_EQ(r.status, exit_status::user_error) << r.output;
  EXPECT_NE(r.output.find("ddpx: error: " + message), std::string::npos) << "expected: " << message << "\n" << r.output;
}

TEST(EditDistance, CountsASwapOfNeighboursAsOneEdit) {
  EXPECT_EQ(edit_distance("train", "train"), 0u);
  EXPECT_EQ(edit_distance("trian", "train"), 1u);   // swap
  EXPECT_EQ(edit_distance("--step", "--steps"), 1u);  // insertion
  EXPECT_EQ(edit_distance("tune", "topo"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(EditDistance, SuggestsOnlyCloseNames) {
  const std::vector<std::string> commands = {"model", "eval", "train", "report", "topo", "allreduce", "bench",
                                             "tune", "predict"};
  EXPECT_EQ(closest_name("trian", commands), "train");
  EXPECT_EQ(closest_name("bnech", commands), "bench");
  EXPECT_EQ(closest_name("allreduse", commands), "allreduce");
  EXPECT_EQ(closest_name("xyzzy", commands), std::nullopt);
  EXPECT_EQ(closest_name("tpo", commands), "topo");      // short names: one edit
  EXPECT_EQ(closest_name("tx", commands), std::nullopt);  // two edits from "topo" and "tune": too far
}

TEST(CliSlips, MistypedCommandGetsDidYouMeanAndTheCommands) {
  const auto r = run_ddpx("trian --steps 10");
  expect_user_error(r, "'trian' is not a ddpx command; did you mean 'train'? Commands: model, eval, train,");
  EXPECT_EQ(r.output.find("A subcommand is required"), std::string::npos) << r.output;
}

TEST(CliSlips, NoCommandListsTheCommands) {
  expect_user_error(run_ddpx(""), "give a command: model, eval, train, report, topo, allreduce, bench, tune, predict");
  expect_user_error(run_ddpx("--steps 10"), "--steps is not a flag of ddpx itself; give a command first");
}

TEST(CliSlips, MistypedFlagGetsDidYouMeanInTheOrderTyped) {
  const auto r = run_ddpx("train --device cpu --step 10");
  expect_user_error(r, "ddpx train: unknown flag --step; did you mean --steps?");
  EXPECT_EQ(r.output.find("were not expected"), std::string::npos) << r.output;
  expect_user_error(run_ddpx("train --step=10"), "ddpx train: unknown flag --step; did you mean --steps?");
  expect_user_error(run_ddpx("predict r.json --bucket-mb 25"),
                    "ddpx predict: unknown flag --bucket-mb; did you mean --bucket-cap-mb?");
  expect_user_error(run_ddpx("train --frobnicate"), "ddpx train: unknown flag --frobnicate; 'ddpx train --help'");
}

// timm's spellings get the ddpx one (--sched used to suggest --seed); torchvision's train.py flags are accepted
// (tests/cli/test_torchvision_flags.cpp), so none of them is answered with a hint.
TEST(CliSlips, OtherFrameworksSpellingsGetTheDdpxFlag) {
  expect_user_error(run_ddpx("train --sched cosine"), "ddpx train: unknown flag --sched; ddpx spells it --lr-schedule");
  expect_user_error(run_ddpx("train --batch_size=64"), "ddpx train: unknown flag --batch_size; ddpx spells it --batch");
  for (const std::string typed : {"--smoothing", "--clip-grad", "--warmup-epochs"})
    ASSERT_TRUE(cli::flag_alias(typed).has_value()) << typed;
  // Every alias names a flag `ddpx train` has, and is not one itself (nor a torchvision spelling): typed, it gets
  // the ddpx spelling.
  for (const cli::FlagAlias& alias : cli::flag_aliases()) {
    EXPECT_FALSE(cli::is_torchvision_only(alias.typed)) << alias.typed;
    const auto r = run_ddpx("train " + std::string(alias.typed) + " 1");
    expect_user_error(r, "ddpx train: unknown flag " + std::string(alias.typed) + "; ddpx spells it " +
                             std::string(alias.ddpx) + " (");
  }
  // A command without the ddpx flag falls back to the nearest of its own names.
  EXPECT_EQ(run_ddpx("model --batch-size 4").output.find("ddpx spells it"), std::string::npos);
}

TEST(CliSlips, ANumberWithAUnitNamesTheFlagAndThePlainNumber) {
  expect_user_error(run_ddpx("train --device cpu --bucket-mb 25MB"),
                    "ddpx train: --bucket-mb '25MB': give a plain number; the unit is in the flag's name or its help "
                    "('ddpx train --help'), e.g. --bucket-mb 25");
  expect_user_error(run_ddpx("train --device cpu --comm-timeout=30s"), "ddpx train: --comm-timeout '30s'");
}

TEST(CliSlips, MissingInputFilesNameTheirFlag) {
  expect_user_error(run_ddpx("train --device cpu --model vit_tiny_test --images nope.npy --labels nope_labels.npy"),
                    "--images nope.npy: no such file; check the path");
  expect_user_error(run_ddpx("train --device cpu --model vit_tiny_test --load nope.safetensors"),
                    "--load nope.safetensors: no such file");
  const auto r = run_ddpx("train --device cpu --model vit_tiny_test --resume nodir");
  expect_user_error(r, "--resume nodir: no checkpoint there (nodir/checkpoint.safetensors does not exist)");
  EXPECT_NE(r.output.find("--resume auto --checkpoint-dir DIR"), std::string::npos) << r.output;
}

TEST(CliSlips, ResumeAutoStartsAfreshOnAnEmptyFolderAndContinuesAfterwards) {
  expect_user_error(run_ddpx("train --device cpu --model vit_tiny_test --resume auto"),
                    "--resume auto needs --checkpoint-dir DIR");
  const auto dir = testing::fresh_dir("resume_auto");
  const std::string run = "train --device cpu --model vit_tiny_test --data learnable --batch 2 --warmup 0 "
                          "--workers 1 --cpu-threads 1 --resume auto --checkpoint-dir " + (dir / "ck").string();
  const auto first = run_ddpx(run + " --steps 2");
  EXPECT_EQ(first.status, exit_status::success) << first.output;
  EXPECT_NE(first.output.find("--resume auto: no checkpoint in " + (dir / "ck").string() + " yet; starting at step 0"),
            std::string::npos) << first.output;
  const auto second = run_ddpx(run + " --steps 3");
  EXPECT_EQ(second.status, exit_status::success) << second.output;
  EXPECT_NE(second.output.find("resumed from " + (dir / "ck").string() + " at step 2"), std::string::npos)
      << second.output;
  std::filesystem::remove_all(dir);
}

TEST(CliSlips, ATraceGivenAsARunReportSaysToUseCheckTrace) {
  const auto dir = testing::fresh_dir("report_trace");
  for (const auto& [name, text] : {std::pair{"object.trace.json", R"({"traceEvents": [], "displayTimeUnit": "ms"})"},
                                   std::pair{"array.trace.json", R"([{"name": "x", "ph": "X", "ts": 0, "dur": 1}])"}}) {
    const auto path = dir / name;
    std::ofstream(path) << text;
    expect_user_error(run_ddpx("report " + path.string()),
                      "'" + path.string() + "' is a Chrome/Perfetto trace, not a run report: check it with `ddpx "
                      "report --check-trace " + path.string() + "`");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
