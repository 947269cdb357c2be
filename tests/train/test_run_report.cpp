// RunRecorder (train/run_report.cpp): a run started through run_training() directly records its version, commit,
// start time, host, optimizer and hyperparameters, every logged step's loss and the summary's throughput, and no
// command line (only `ddpx train` has one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "core/build_info.hpp"
#include "model/vit/vit_layout.hpp"
#include "report/step_record.hpp"
#include "train/trainer.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;

TEST(RunReport, RunTrainingRecordsWhatMadeTheRunWithoutACommandLine) {
  const fs::path dir = fs::temp_directory_path() / ("ddpx_test_train_run_report_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  TrainOptions o;
  o.model = "vit_tiny_test";
  o.batch = 2;
  o.steps = 7;
  o.warmup_steps = 2;
  o.log_every = 3;
  o.data = DataSource::learnable;
  o.optimizer = OptimizerSpec{.kind = OptimizerKind::adamw, .lr = 2e-3f, .weight_decay = 0.01f, .beta1 = 0.8f,
                              .beta2 = 0.99f, .eps = 1e-7f};
  o.workers = 1;
  o.quiet = true;
  o.report = (dir / "run.json").string();
  const TrainSummary summary = run_training(o);

  const RunReport report = load_run_report(o.report);
  EXPECT_EQ(report.config.ddpx_version, ddpx_version());
  EXPECT_EQ(report.config.ddpx_commit, ddpx_commit());
  EXPECT_EQ(report.config.weight_grads, "fp32");  // a CPU run (bf16 needs --precision bf16 on cuda)
  EXPECT_EQ(report.config.started_utc.size(), std::string("2026-12-01T09:37:00Z").size());
  EXPECT_TRUE(report.config.command_line.empty());
  // How the run was set up, as fields of their own.
  EXPECT_EQ(report.config.backend, "");  // one process without DDP: no communicator
  EXPECT_EQ(report.config.seed, o.seed);
  EXPECT_EQ(report.config.steps, 7);
  EXPECT_EQ(report.config.warmup, 2);
  EXPECT_EQ(report.config.data, "learnable");
  EXPECT_EQ(report.config.optimizer, (OptimizerInfo{"adamw", 2e-3, 0, 0.01, 0.8, 0.99, 1e-7, false}));
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(report.ranks.at(0).info.host, host);
  // Logged: the first step, every --log-every 3, the last.
  const std::vector<LossPoint>& losses = report.ranks.at(0).losses;
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_EQ((std::vector<int64_t>{losses[0].step, losses[1].step, losses[2].step, losses[3].step}),
            (std::vector<int64_t>{1, 3, 6, 7}));
  EXPECT_FLOAT_EQ(static_cast<float>(losses.front().loss), summary.first_loss);
  EXPECT_FLOAT_EQ(static_cast<float>(losses.back().loss), summary.final_loss);
  // The gradient buffer's tensors, in buffer order, as VitLayout places them (ddpx predict re-cuts buckets).
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  ASSERT_EQ(report.config.gradient_tensors.size(), layout.tensors().size());
  for (size_t k = 0; k < layout.tensors().size(); ++k) {
    EXPECT_EQ(report.config.gradient_tensors[k].name, layout.tensors()[k].name);
    EXPECT_EQ(report.config.gradient_tensors[k].shape, layout.tensors()[k].shape);
    EXPECT_EQ(report.config.gradient_tensors[k].offset, static_cast<int64_t>(layout.tensors()[k].offset));
  }
  ASSERT_TRUE(report.throughput.has_value());
  EXPECT_DOUBLE_EQ(report.throughput->steps_per_s, summary.steps_per_s);
  EXPECT_DOUBLE_EQ(report.throughput->images_per_s, summary.images_per_s);
  // config.ddp: whether the run had a reducer (the run settings table's row, written once).
  EXPECT_FALSE(report.config.ddp);
  TrainOptions ddp = o;
  ddp.ddp = true;
  ddp.backend = BackendChoice::named("self");  // a reducer at world 1 in this process
  ddp.steps = 3;
  ddp.report = (dir / "ddp.json").string();
  run_training(ddp);
  EXPECT_TRUE(load_run_report(ddp.report).config.ddp);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
