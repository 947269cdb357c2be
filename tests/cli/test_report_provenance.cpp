// What made a run: `ddpx --version` names the version and the commit; a `ddpx train --report` report records
// version, commit, start time, host, command line, optimizer, losses and throughput, and `ddpx report` prints them
// (an older report without them still reads, marked "not recorded").
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <regex>

#include "cli_runner.hpp"
#include "core/build_info.hpp"
#include "report/step_record.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::fresh_dir;
using testing::recorded;
using testing::run_ddpx;

TEST(Version, PrintsTheVersionAndTheCommitOfTheBuild) {
  const auto r = run_ddpx("--version");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, r.output.find('\n') + 1), "ddpx " + ddpx_version() + " (commit " + ddpx_commit() + ")\n");
  // The second line says which --device this binary can use here (scripts/run.sh reads it); no GPU here. The third
  // names the communication backends built (tests/scripts/build_features.py reads it).
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\ndevices: cpu( \\(built without CUDA\\)| \\(built with CUDA; no GPU "
                                                     "visible\\)|, cuda \\([0-9]+ GPUs?\\))\nbackends: [a-z, ;-]+"
                                                     "( \\(not built: [a-z, ]+\\))?\n$")))
      << r.output;
  EXPECT_FALSE(ddpx_version().empty());
  // A short hash (optionally -dirty) in a git checkout, "unknown" outside one.
  EXPECT_TRUE(std::regex_match(ddpx_commit(), std::regex("[0-9a-f]{4,40}(-dirty)?|unknown"))) << ddpx_commit();
}

TEST(ReportProvenance, TrainRecordsWhatMadeTheRunAndReportPrintsIt) {
  const fs::path dir = fresh_dir("provenance");
  const std::string report_path = (dir / "run.json").string();
  const std::string args = "train --device cpu --model vit_tiny_test --batch 2 --steps 6 --warmup 2 --log-every 2 "
                           "--workers 1 --cpu-threads 1 --optimizer sgd --lr 0.05 --momentum 0.9 --nesterov "
                           "--report " + report_path;
  const auto train = run_ddpx(args);
  ASSERT_EQ(train.status, 0) << train.output;

  const RunReport report = load_run_report(report_path);
  EXPECT_EQ(report.config.ddpx_version, ddpx_version());
  EXPECT_EQ(report.config.ddpx_commit, ddpx_commit());
  EXPECT_TRUE(std::regex_match(report.config.started_utc, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << report.config.started_utc;
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(report.ranks.at(0).info.host, host);
  ASSERT_FALSE(report.config.command_line.empty());
  EXPECT_EQ(report.config.command_line.front(), DDPX_BINARY);
  EXPECT_EQ(report.config.command_line.at(1), "train");
  EXPECT_EQ(report.config.command_line.back(), report_path);
  EXPECT_EQ(report.config.optimizer.name, "sgd");
  EXPECT_DOUBLE_EQ(report.config.optimizer.lr, 0.05);
  EXPECT_DOUBLE_EQ(report.config.optimizer.momentum, 0.9);
  EXPECT_TRUE(report.config.optimizer.nesterov);
  // Logged steps: the first and every --log-every 2 (1, 2, 4, 6), warm-up included.
  const std::vector<LossPoint>& losses = report.ranks.at(0).losses;
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_EQ(losses.front().step, 1);
  EXPECT_EQ(losses.back().step, 6);
  for (const LossPoint& point : losses) EXPECT_TRUE(std::isfinite(point.loss) && point.loss > 0);
  ASSERT_TRUE(report.throughput.has_value());
  EXPECT_GT(report.throughput->steps_per_s, 0);
  EXPECT_DOUBLE_EQ(report.throughput->images_per_s, report.throughput->steps_per_s * 2);

  const auto shown = run_ddpx("report " + report_path);
  ASSERT_EQ(shown.status, 0) << shown.output;
  EXPECT_NE(shown.output.find("run: ddpx " + ddpx_version() + " (commit " + ddpx_commit() + "), started " +
                              report.config.started_utc + ", host " + host),
            std::string::npos)
      << shown.output;
  EXPECT_NE(shown.output.find("command: " + std::string(DDPX_BINARY) + " train --device cpu"), std::string::npos)
      << shown.output;
  EXPECT_NE(shown.output.find("optimizer: sgd lr 0.05 momentum 0.9 nesterov weight_decay 0"), std::string::npos)
      << shown.output;
  EXPECT_NE(shown.output.find("loss (rank 0, 4 logged steps): step 1 "), std::string::npos) << shown.output;
  EXPECT_NE(shown.output.find("throughput: "), std::string::npos) << shown.output;
  fs::remove_all(dir);
}

TEST(ReportProvenance, AnOlderReportSaysNotRecorded) {
  const auto shown = run_ddpx("report " + recorded("compute_bound.json"));
  ASSERT_EQ(shown.status, 0) << shown.output;
  EXPECT_NE(shown.output.find("run: ddpx not recorded (commit not recorded), started not recorded, host not "
                              "recorded"),
            std::string::npos)
      << shown.output;
  EXPECT_NE(shown.output.find("optimizer: not recorded"), std::string::npos) << shown.output;
  EXPECT_NE(shown.output.find("loss: not recorded"), std::string::npos) << shown.output;
}

}  // namespace
}  // namespace ddpx
