// `ddpx predict` end to end on the CPU: a real one-rank report from `ddpx train --ddp --report`, priced on a preset
// and on a link measured by `ddpx allreduce --device cpu --json` (2 MPI ranks), the table and the JSON; and every
// bad input the command refuses, each naming the file or flag and the value (exit status 2).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "cli_runner.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::fresh_dir;
using testing::read_text;
using testing::recorded;
using testing::run_ddpx;

class PredictCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fresh_dir("predict"));
    report_ = new std::string((*dir_ / "one.json").string());
    const auto train = run_ddpx("train --device cpu --model vit_tiny_test --ddp --batch 2 --steps 6 --warmup 2 "
                                "--workers 1 --cpu-threads 1 --bucket-mb 0.01 --first-bucket-mb 0.01 --report " +
                                *report_);
    ASSERT_EQ(train.status, 0) << train.output;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete report_;
  }
  static std::string write(const std::string& name, const std::string& text) {
    std::ofstream(*dir_ / name) << text;
    return (*dir_ / name).string();
  }
  static void expect_refused(const std::string& args, std::initializer_list<std::string> needles) {
    const auto r = run_ddpx("predict " + args);
    EXPECT_EQ(r.status, 2) << r.output;
    for (const std::string& needle : needles) EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
  }
  static fs::path* dir_;
  static std::string* report_;
};
fs::path* PredictCli::dir_ = nullptr;
std::string* PredictCli::report_ = nullptr;

TEST_F(PredictCli, PrintsTheTableAndWritesJsonFromARealReport) {
  const std::string json_path = (*dir_ / "prediction.json").string();
  const auto r = run_ddpx("predict " + *report_ + " --link nvlink4 --network ib-ndr --ranks 2,8,64 --hooks "
                          "allreduce,bf16,powersgd:2 --bucket-cap-mb 0.01,25 --json " + json_path);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# ddpx predict: vit_tiny_test fp32, batch 2 per rank, on cpu"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# recommended at 64 ranks: --comm-hook"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("note: hook bf16: no report"), std::string::npos) << r.output;
  const nlohmann::json j = nlohmann::json::parse(read_text(json_path));
  EXPECT_EQ(j["tool"], "ddpx predict");
  ASSERT_EQ(j["rows"].size(), 3u * 3u * 2u);
  EXPECT_EQ(j["recommendations"].size(), 3u);
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["steps_per_s"].get<double>(), 0);
    EXPECT_GE(row["exposed_comm_ms"].get<double>(), 0);
    EXPECT_NEAR(row["step_ms"].get<double>(), row["compute_ms"].get<double>() + row["exposed_comm_ms"].get<double>(),
                1e-9);
  }
  // The 0.01 MiB cap re-cuts the tiny model into several buckets; at 25 MiB only the report's 0.01 MiB first bucket
  // stays apart from the rest.
  EXPECT_GT(j["rows"][0]["buckets"].get<int>(), 2);
  EXPECT_EQ(j["rows"][1]["buckets"].get<int>(), 2);
  EXPECT_TRUE(j["reports"][0]["ready_times_measured"].get<bool>());
  // Wire bytes: bf16 sends half of allreduce's.
  EXPECT_EQ(j["rows"][2]["wire_bytes"].get<int64_t>() * 2, j["rows"][0]["wire_bytes"].get<int64_t>());
}

TEST_F(PredictCli, HelpTeachesTheModelAndThePresets) {
  const auto r = run_ddpx("predict --help");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* needle : {"How it works", "NCCL", "pcie-shm", "nvlink3", "nvlink4", "ib-ndr", "--bucket-cap-mb",
                             "exposed", "ddpx train --device cuda --model vit_l_32 --ddp"})
    EXPECT_NE(r.output.find(needle), std::string::npos) << needle;
}

// Issue 37 item 8: `predict R --json R` replaced the run report it read; the same-file check covers it now.
TEST_F(PredictCli, ItsJsonMayNotBeTheReportItReads) {
  const std::string before = testing::read_text(*report_);
  expect_refused(*report_ + " --link nvlink4 --json " + *report_, {"--json", "the report", "one.json"});
  EXPECT_EQ(testing::read_text(*report_), before);
}

TEST_F(PredictCli, ReadsNcclTestsOwnOutputAsTheLink) {
  // A cluster's existing all_reduce_perf logs, text or -J JSON, price the link.
  for (const char* file : {"nccl_tests_all_reduce_2xh200.txt", "nccl_tests_all_reduce_2xh200.json"}) {
    const auto r = run_ddpx("predict " + *report_ + " --link " + testing::recorded(file) + " --hooks allreduce");
    ASSERT_EQ(r.status, 0) << file << "\n" << r.output;
    EXPECT_NE(r.output.find("(nccl-tests all_reduce_perf, 2 ranks, fitted "), std::string::npos) << r.output;
  }
}

TEST_F(PredictCli, BadInputIsRefusedNamingWhatAndWhy) {
  expect_refused(*report_ + " --link nvlink9", {"--link nvlink9", "unknown preset"});
  expect_refused(*report_ + " --link nvlink4 --network roce", {"--network roce"});
  expect_refused(*report_ + " --link nvlink4 --ranks 16", {"--ranks 16", "beyond", "--network ib-ndr"});
  expect_refused(*report_ + " --link " + *report_, {"this is a run report", "ddpx allreduce"});
  expect_refused(*report_ + " --link " + write("nccl.txt", "#  size  count  type  time  algbw  busbw\n"),
                 {"nccl.txt", "text"});
  expect_refused(*report_ + " --link " +
                     write("gpu-link.json", R"({"collective": "all_reduce", "world": 2, "device": "cuda",
                           "points": [{"bytes": 1024, "busbw_GBps": 1}]})"),
                 {"gpu-link.json", "--device cuda", "ddpx allreduce --device cpu"});
  expect_refused(*report_ + " --link " +
                     write("l32-link.json", R"({"collective": "all_reduce", "world": 2, "model": "vit_l_32",
                           "points": [{"bytes": 1024, "busbw_GBps": 1}]})"),
                 {"l32-link.json", "model 'vit_l_32'", "vit_tiny_test"});
  expect_refused(recorded("comm_bound_nvlink.json") + " --link nvlink4", {"comm_bound_nvlink.json", "2 ranks"});
  expect_refused(*report_ + " --link nvlink4 --hooks powersgd", {"--hooks", "powersgd"});
  expect_refused(*report_ + " --link nvlink4 --bucket-cap-mb 0", {"--bucket-cap-mb"});
  expect_refused((*dir_ / "absent.json").string() + " --link nvlink4", {"absent.json"});
  expect_refused(*report_ + " " + *report_ + " --link nvlink4", {"both measured hook allreduce"});
}

TEST_F(PredictCli, AReportWithoutGradientTensorsTakesThemFromTheModelLayout) {
  // A report of an older ddpx (no config.gradient_tensors): the CLI fills them from ddpx's layout of its model and
  // says so; a report whose model ddpx does not know stays an error.
  // The H200 report of docs/results (ViT-L/32 bf16, --ddp at world 1) is one.
  const std::string h200 = std::string(DDPX_SOURCE_DIR) + "/docs/results/2026-12-01-h200-bf16-ddp1-report.json";
  const auto r = run_ddpx("predict " + h200 + " --link nvlink4 --ranks 2,8 --hooks allreduce --bucket-cap-mb 25");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("predates config.gradient_tensors; its tensors are ddpx's layout of model vit_l_32"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("# ddpx predict: vit_l_32 bf16, batch 32 per rank, on NVIDIA H200"), std::string::npos)
      << r.output;
  // A synthetic report whose buckets are not ddpx's plan of its model is refused, naming both counts.
  expect_refused(recorded("ddp_one_gpu.json") + " --link nvlink4", {"ddp_one_gpu.json", "13 buckets", "73"});
  nlohmann::json old = nlohmann::json::parse(read_text(h200));
  old["config"]["model"] = "resnet50";
  expect_refused(write("resnet.json", old.dump()) + " --link nvlink4", {"resnet50"});
}

#ifdef DDPX_MPIEXEC
TEST_F(PredictCli, PricesALinkMeasuredByDdpxAllreduce) {
  const std::string link = (*dir_ / "link.json").string();
  const auto measure = run_ddpx("allreduce --device cpu --nproc-per-node 2 --sizes 4K:64K --iters 2 --warmup 1 "
                                "--json " + link);
  ASSERT_EQ(measure.status, 0) << measure.output;
  const auto r = run_ddpx("predict " + *report_ + " --link " + link + " --hooks allreduce --bucket-cap-mb 25");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# link: measured: " + link + " (2 ranks, MPI"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("# recommended at 2 ranks"), std::string::npos) << r.output;
  // One node of the measured world: 4 ranks need --ranks-per-node (or a network).
  expect_refused(*report_ + " --link " + link + " --ranks 4", {"--ranks 4", "--ranks-per-node"});
  const auto four = run_ddpx("predict " + *report_ + " --link " + link + " --ranks 4 --ranks-per-node 4");
  EXPECT_EQ(four.status, 0) << four.output;
  EXPECT_NE(four.output.find("extrapolates"), std::string::npos) << four.output;
}
#endif

}  // namespace
}  // namespace ddpx
