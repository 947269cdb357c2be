// Note [Data opened once] (data/data_sources.cpp) in a training run: --data and --val are each opened once per rank
// (every rank runs run_training: the count is per process), whatever reads them after (the class count, --epochs,
// --eval-every epoch, the checkpoint's fingerprint check on --resume, the report); the registry's counting hook
// (data_opens) counts them. And the flag the user typed reaches the errors: a bad --val is named --val, a bad
// `ddpx pack SOURCE` is named so, through the CLI.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "data/data_sources.hpp"
#include "error_expect.hpp"
#include "support/scratch_dir.hpp"
#include "train/trainer.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

// Plain idx files of 12 images 4x4 with labels 0, 1, 2, 0, ...: three classes, no names.
fs::path tiny_idx(const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<uint8_t> images, labels;
  put_u32(images, 0x803);
  for (uint32_t v : {12u, 4u, 4u}) put_u32(images, v);
  for (int i = 0; i < 12 * 16; ++i) images.push_back(static_cast<uint8_t>(i * 7));
  put_u32(labels, 0x801);
  put_u32(labels, 12);
  for (int i = 0; i < 12; ++i) labels.push_back(static_cast<uint8_t>(i % 3));
  std::ofstream(dir / "train-images-idx3-ubyte", std::ios::binary)
      .write(reinterpret_cast<const char*>(images.data()), static_cast<std::streamsize>(images.size()));
  std::ofstream(dir / "train-labels-idx1-ubyte", std::ios::binary)
      .write(reinterpret_cast<const char*>(labels.data()), static_cast<std::streamsize>(labels.size()));
  return dir;
}

struct Opens {
  int64_t data = data_opens(DataOrigin::train_data), val = data_opens(DataOrigin::train_val);
};

TEST(DataOpens, ATrainRunOpensDataAndValOnceEach) {
  const testing::ScratchDir scratch("ddpx-data-opens");
  const std::string idx = "idx:" + tiny_idx(scratch.path() / "idx").string();
  TrainOptions o;
  o.model = "mlp:image=4,channels=1,layers=1,width=8";  // 10 classes: the data's 3 reach the model as a count
  o.data = parse_data_spec(idx, DataOrigin::train_data);
  o.val = parse_data_spec(idx, DataOrigin::train_val);
  o.batch = 2;
  o.epochs = 1;  // the run's length counts the data's batches: it opened --data a third time
  o.eval_every = "epoch";
  o.warmup_steps = 0;
  o.calibrate_steps = 0;
  o.workers = 1;
  o.quiet = true;
  o.checkpoint_dir = (scratch.path() / "ckpt").string();
  o.report = (scratch.path() / "report.json").string();
  o.optimizer.lr = 0.01f;
  const Opens before;
  EXPECT_EQ(run_training(o).steps_run, 6);  // 12 images in batches of 2: one epoch
  EXPECT_EQ(data_opens(DataOrigin::train_data) - before.data, 1);
  EXPECT_EQ(data_opens(DataOrigin::train_val) - before.val, 1);

  // --resume: the checkpoint's fingerprint is compared with the one open's.
  TrainOptions resumed = o;
  resumed.epochs = 2;
  resumed.resume = o.checkpoint_dir;
  resumed.checkpoint_dir.clear();
  resumed.report.clear();
  const Opens again;
  EXPECT_EQ(run_training(resumed).steps_run, 6);  // the second epoch
  EXPECT_EQ(data_opens(DataOrigin::train_data) - again.data, 1);
  EXPECT_EQ(data_opens(DataOrigin::train_val) - again.val, 1);
}

// The same data as --val names --val in its errors, through `ddpx train`; `ddpx pack SOURCE` names SOURCE.
TEST(DataOpens, ABadValOrPackSourceIsNamedByItsFlag) {
  const testing::ScratchDir scratch("ddpx-data-flags");
  const std::string idx = "idx:" + tiny_idx(scratch.path() / "idx").string();
  const std::string missing = (scratch.path() / "missing").string();
  for (const std::string& kind : {"idx:", "folder:", "pack:", "wds:"}) {
    const testing::CliResult val = testing::run_ddpx(fmt::format(
        "train --device cpu --model mlp:image=4,channels=1,layers=1,width=8 --data {} --val {}{} --steps 1 --batch 2",
        idx, kind, missing + (kind == "wds:" ? ".tar" : "")));
    EXPECT_NE(val.status, 0);
    EXPECT_NE(val.output.find("--val " + kind), std::string::npos) << val.output;
    EXPECT_EQ(val.output.find("--data " + kind), std::string::npos) << val.output;
    const testing::CliResult pack = testing::run_ddpx(
        fmt::format("pack {}{} {}", kind, missing + (kind == "wds:" ? ".tar" : ""), (scratch.path() / "o.pack").string()));
    EXPECT_NE(pack.status, 0);
    EXPECT_NE(pack.output.find("ddpx pack SOURCE " + kind), std::string::npos) << pack.output;
    EXPECT_EQ(pack.output.find("--data"), std::string::npos) << pack.output;
  }
}

}  // namespace
}  // namespace ddpx
