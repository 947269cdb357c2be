// What a resume checks about the data, end to end through the ddpx executable (issue 48 item 7): a checkpoint
// records its data's class names and fingerprint; a resume on relabelled classes (`mv data/c0 data/c9`) is refused
// naming both lists whatever the flags; a resume on changed files is refused unless --allow-data-change, which the
// run report records. And an output inside the data folder is refused before training.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_runner.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::run_ddpx;

void copy_fixture(const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/images/rgb.png", to, fs::copy_options::overwrite_existing);
}

TEST(DataResume, RelabelledClassesAreRefusedAndChangedFilesNeedAllowDataChange) {
  const fs::path dir = testing::fresh_dir("train", "data_resume");
  const fs::path data = dir / "data", ckpt = dir / "ckpt", report = dir / "r.json";
  for (const char* file : {"c0/a.png", "c0/b.png", "c1/c.png", "c1/d.png", "c2/e.png"}) copy_fixture(data / file);
  const std::string train = "train --device cpu --model mlp:image=8,channels=3,layers=1,width=8 --batch 2 --data folder:" +
                            data.string() + " --checkpoint-dir " + ckpt.string() + " --checkpoint-every 1 --warmup 0";
  const testing::CliResult first = run_ddpx(train + " --steps 2");
  ASSERT_EQ(first.status, 0) << first.output;

  // issue 48: the labels permuted by a rename, and the run resumed, exit 0.
  fs::rename(data / "c0", data / "c9");
  const testing::CliResult renamed = run_ddpx(train + " --steps 3 --resume " + ckpt.string() + " --allow-data-change");
  EXPECT_EQ(renamed.status, 2) << renamed.output;
  EXPECT_NE(renamed.output.find("trained on the classes [c0, c1, c2]"), std::string::npos) << renamed.output;
  EXPECT_NE(renamed.output.find("has [c1, c2, c9]"), std::string::npos) << renamed.output;
  fs::rename(data / "c9", data / "c0");

  // A file added inside a class: refused, then accepted with --allow-data-change and recorded in the report.
  copy_fixture(data / "c1" / "new.png");
  const testing::CliResult added = run_ddpx(train + " --steps 3 --resume " + ckpt.string());
  EXPECT_EQ(added.status, 2) << added.output;
  EXPECT_NE(added.output.find("is not the data the checkpoint was trained on"), std::string::npos) << added.output;
  EXPECT_NE(added.output.find("5 samples, 3 classes"), std::string::npos) << added.output;
  EXPECT_NE(added.output.find("6 samples, 3 classes"), std::string::npos) << added.output;
  EXPECT_NE(added.output.find("--allow-data-change"), std::string::npos) << added.output;
  const testing::CliResult allowed =
      run_ddpx(train + " --steps 3 --resume " + ckpt.string() + " --allow-data-change --report " + report.string());
  ASSERT_EQ(allowed.status, 0) << allowed.output;
  EXPECT_NE(testing::read_text(report).find("\"allow_data_change\": true"), std::string::npos);
  // Its checkpoints record the new data: the same data resumes without the flag, a removal is refused again.
  const testing::CliResult same = run_ddpx(train + " --steps 4 --resume " + ckpt.string());
  EXPECT_EQ(same.status, 0) << same.output;
  fs::remove(data / "c1" / "new.png");
  const testing::CliResult removed = run_ddpx(train + " --steps 5 --resume " + ckpt.string());
  EXPECT_EQ(removed.status, 2) << removed.output;
  EXPECT_NE(removed.output.find("checkpoint: 6 samples, 3 classes"), std::string::npos) << removed.output;

  // An output inside the data folder (a report among the class folders) is refused before the run, naming --data.
  const testing::CliResult inside = run_ddpx(train + " --steps 5 --report " + (data / "c0" / "r.json").string());
  EXPECT_EQ(inside.status, 2) << inside.output;
  EXPECT_NE(inside.output.find("is inside --data folder:"), std::string::npos) << inside.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
