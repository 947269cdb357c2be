// What a newcomer reads: every `--help` fits 120 columns without CLI11's artefacts and ends with that command's own
// examples; `train --help` carries no benchmark figures or file policy in its flag texts; progress lines give
// elapsed time, ETA and the learning rate; --quiet drops the progress but keeps the summary, breakdown and verdict;
// `eval` says what it reads and how far it is.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/help_format.hpp"
#include "cli_runner.hpp"
#include "io/npy.hpp"

namespace ddpx {
namespace {

using testing::run_ddpx;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Help, EveryCommandFits120ColumnsWithPlainTypesAndItsOwnExamples) {
  for (const std::string command : {"", "model", "eval", "train", "report", "topo", "allreduce", "bench", "tune",
                                    "predict", "data-preview"}) {
    const auto r = run_ddpx(command + " --help");
    ASSERT_EQ(r.status, 0) << command << "\n" << r.output;
    for (const std::string& line : lines_of(r.output))
      EXPECT_LE(line.size(), 120u) << "ddpx " << command << " --help: " << line;
    for (const char* artefact : {"INT:INT", ":INT=", "in [1 - 1024]", ":FLOAT", "TEXT:"})
      EXPECT_EQ(r.output.find(artefact), std::string::npos) << "ddpx " << command << " --help has " << artefact;
    if (command.empty() || command == "predict") continue;
    // Its own examples, not the global list under every command.
    EXPECT_NE(r.output.find("Examples:\n  ddpx " + command), std::string::npos) << command << "\n" << r.output;
    if (command != "topo")
      EXPECT_EQ(r.output.find("ddpx topo                                           GPU links"), std::string::npos)
          << "the global examples under ddpx " << command;
  }
}

// The list of commands shows each description's first sentence whole; it used to cut at the first line break
// ("out-of-place and in-place time," and nothing after).
TEST(Help, TheListOfCommandsShowsWholeSentences) {
  EXPECT_EQ(cli::first_sentence("One line\nand its end. A second sentence."), "One line and its end.");
  EXPECT_EQ(cli::first_sentence("Flags (e.g. --ddp) here. More."), "Flags (e.g. --ddp) here.");
  EXPECT_EQ(cli::first_sentence("No full stop"), "No full stop");
  const auto r = run_ddpx("--help");
  ASSERT_EQ(r.status, 0) << r.output;
  std::string flat;  // the help with its line breaks and indentation made single spaces
  for (const std::string& line : lines_of(r.output)) {
    std::istringstream words(line);
    for (std::string word; words >> word;) flat += word + " ";
  }
  EXPECT_NE(flat.find("and write the peak table that run reports compare their buckets with."), std::string::npos)
      << r.output;
  EXPECT_NE(flat.find("Train a ViT, data-parallel when started on several ranks. "), std::string::npos) << r.output;
  EXPECT_EQ(flat.find("Prints a progress line every --log-every steps"), std::string::npos) << r.output;
}

TEST(Help, TrainHelpTeachesWithoutBenchmarkFiguresOrFilePolicy) {
  const auto r = run_ddpx("train --help");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* noise : {"steps/s", "115.9", "99.2", "FIFOs", "symlink", "the seed"})
    EXPECT_EQ(r.output.find(noise), std::string::npos) << "train --help still says " << noise;
  // A value's default at the end of its description, and the AdamW defaults explained.
  EXPECT_NE(r.output.find("--batch INT"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(default 32)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("adamw 0.001, as PyTorch's AdamW"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--resume auto"), std::string::npos) << r.output;
}

const std::string kTiny = "train --device cpu --model vit_tiny_test --data learnable --batch 2 --warmup 1 --workers 1 "
                          "--cpu-threads 1 ";

TEST(Progress, LinesShowElapsedEtaAndLearningRate) {
  const auto r = run_ddpx(kTiny + "--steps 4 --log-every 2 --optimizer adamw");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ddpx train: preparing vit_tiny_test"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step      2/4 | loss "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("| lr 0.001 |"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" elapsed, ETA "), std::string::npos) << r.output;
}

TEST(Progress, QuietDropsProgressButKeepsSummaryBreakdownAndVerdict) {
  const auto dir = testing::fresh_dir("quiet");
  const auto r = run_ddpx(kTiny + "--steps 4 --quiet --save " + (dir / "w.safetensors").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("\nstep "), std::string::npos) << r.output;
  EXPECT_NE(r.output.rfind("step ", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find("preparing"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("saving weights"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("summary: 4 steps"), std::string::npos) << r.output;
  // Two throughputs, each saying which it is: the summary's by the wall clock, the breakdown's from the median step.
  EXPECT_NE(r.output.find("images/s by the wall clock"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("from the straggler's median step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("verdict"), std::string::npos) << r.output;
  const auto loud = run_ddpx(kTiny + "--steps 4 --save " + (dir / "w2.safetensors").string());
  EXPECT_EQ(loud.output.find("0.0 GB"), std::string::npos) << loud.output;  // the unit follows the size
  EXPECT_NE(loud.output.find("kB of fp32 weights"), std::string::npos) << loud.output;
  EXPECT_NE(loud.output.find("saving weights to " + (dir / "w2.safetensors").string()), std::string::npos)
      << loud.output;
  std::filesystem::remove_all(dir);
}

TEST(Progress, EvalSaysWhatItReadsAndHowFarItIs) {
  const auto dir = testing::fresh_dir("eval_progress");
  const std::string weights = (dir / "w.safetensors").string();
  ASSERT_EQ(run_ddpx(kTiny + "--steps 1 --quiet --save " + weights).status, 0);
  // vit_tiny_test: 3 x 16 x 16 images; 20 of them in batches of 4 -> five parts of one batch each.
  write_npy(dir / "x.npy", HostTensor::from_values<float>({20, 3, 16, 16}, std::vector<float>(20 * 3 * 16 * 16, 0.5f)));
  const auto r = run_ddpx("eval --model vit_tiny_test --weights " + weights + " --images " + (dir / "x.npy").string() +
                          " --batch 4");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("eval: reading --weights " + weights), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("eval: reading --images "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("eval: 4/20 images (20%)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("eval: 20/20 images (100%)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("image    0: class"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
