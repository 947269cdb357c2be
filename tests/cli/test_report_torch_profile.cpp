// `ddpx report --torch-profile`: a PyTorch DDP run's profiler traces (tests/fixtures/torch_profile, from
// tools/record_torch_profile.py: Debian's torch 1.13, Gloo, 2 CPU ranks, rank 1 delayed 40 ms in its forward) get
// the breakdown and verdict of a ddpx run, and a one-rank report that `ddpx predict` takes.
#include <gtest/gtest.h>

#include "cli_runner.hpp"
#include "report/step_record.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::fresh_dir;
using testing::run_ddpx;

const std::string kTraces = std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/torch_profile/trace_rank0.json " +
                            std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/torch_profile/trace_rank1.json";

TEST(ReportTorchProfile, BreakdownVerdictAndAOneRankReportForPredict) {
  const fs::path dir = fresh_dir("torch_profile");
  const std::string base = (dir / "base.json").string();
  const auto r = run_ddpx("report --torch-profile " + kTraces + " --torch-batch 32 --one-rank-report " + base +
                          " --torch-gradients 18954");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("one-rank report: " + base + " (rank 0's steps"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("verdict:"), std::string::npos) << r.output;
  const RunReport one = load_run_report(base);
  EXPECT_EQ(one.config.world, 1);
  EXPECT_EQ(one.config.batch, 32);
  ASSERT_EQ(one.ranks.size(), 1u);
  EXPECT_EQ(one.ranks[0].steps.size(), 2u);
  const auto predict = run_ddpx("predict " + base + " --link nvlink4 --ranks 2,8");
  EXPECT_EQ(predict.status, 0) << predict.output;
}

TEST(ReportTorchProfile, RefusesMixedInputsAndMissingFacts) {
  const fs::path dir = fresh_dir("torch_profile_refused");
  auto refused = [](const std::string& args, const std::string& needle) {
    const auto r = run_ddpx(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
  };
  refused("report run.json --torch-profile " + kTraces, "a run report or --torch-profile traces, not both");
  refused("report --torch-profile " + kTraces + " --one-rank-report " + (dir / "b.json").string(),
          "give --torch-gradients N");
  refused("report --torch-profile " + std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/torch_ddp/labels.u8",
          "is not JSON");
}

}  // namespace
}  // namespace ddpx
