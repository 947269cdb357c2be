// The CLI's helpers: list and size flags, trial throughput from the run report, owned-flag checks, the all-reduce check values,
// PCI bus id matching and child processes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "cli/arg_lists.hpp"
#include "cli/child_process.hpp"
#include "cli/collective_bench.hpp"
#include "cli/cuda_devices.hpp"
#include "cli/launch.hpp"
#include "cli/train_trial.hpp"
#include "cli_runner.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "error_expect.hpp"
#include "report/step_record.hpp"

namespace ddpx::cli {
namespace {

using testing::error_of;

TEST(ArgLists, ListsAreTrimmedDeduplicatedAndKeepOrder) {
  EXPECT_EQ(split_list(" bf16, fp32,,bf16 ", "--precisions"), (std::vector<std::string>{"bf16", "fp32"}));
  EXPECT_EQ(parse_number_list("25,2000,0.5", "--bucket-mb"), (std::vector<double>{25, 2000, 0.5}));
  EXPECT_EQ(parse_count_list("1,2,8", "--gpus"), (std::vector<int>{1, 2, 8}));
  EXPECT_NE(error_of([] { split_list(" , ", "--hooks"); }).find("--hooks"), std::string::npos);
  EXPECT_NE(error_of([] { parse_number_list("5,-1", "--bucket-mb"); }).find("'-1'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_count_list("1,0", "--gpus"); }).find("--gpus"), std::string::npos);
  EXPECT_NE(error_of([] { parse_count_list("2x", "--gpus"); }).find("'2x'"), std::string::npos);
}

TEST(ArgLists, ByteSizesAndSweeps) {
  EXPECT_EQ(parse_byte_size("4096", "--sizes"), 4096);
  EXPECT_EQ(parse_byte_size("4K", "--sizes"), 4096);
  EXPECT_EQ(parse_byte_size("256MB", "--sizes"), int64_t{256} << 20);
  EXPECT_EQ(parse_byte_size("2G", "--sizes"), int64_t{2} << 30);
  EXPECT_NE(error_of([] { parse_byte_size("1X", "--sizes"); }).find("'1X'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_byte_size("0", "--sizes"); }).find("--sizes"), std::string::npos);

  const std::vector<int64_t> doubling = parse_size_sweep("1K:1M", "--sizes");
  ASSERT_EQ(doubling.size(), 11u);  // 2^10 .. 2^20
  for (size_t i = 0; i < doubling.size(); ++i) EXPECT_EQ(doubling[i], int64_t{1024} << i);
  const std::vector<int64_t> by_four = parse_size_sweep("1K:1G:4", "--sizes");
  ASSERT_EQ(by_four.size(), 11u);  // 4^0 .. 4^10 KiB
  EXPECT_EQ(by_four.back(), int64_t{1} << 30);
  EXPECT_EQ(parse_size_sweep("1M,4K,1M", "--sizes"), (std::vector<int64_t>{4096, 1 << 20}));
  EXPECT_EQ(parse_size_sweep("3K:10K", "--sizes"), (std::vector<int64_t>{3072, 6144}));
  EXPECT_NE(error_of([] { parse_size_sweep("1M:1K", "--sizes"); }).find("backwards"), std::string::npos);
  EXPECT_NE(error_of([] { parse_size_sweep("1K:1M:1", "--sizes"); }).find("factor"), std::string::npos);
  EXPECT_EQ(format_byte_size(1024), "1K");
  EXPECT_EQ(format_byte_size(int64_t{3} << 30), "3G");
  EXPECT_EQ(format_byte_size(1000), "1000");
}

TEST(TrainTrial, ThroughputComesFromTheRunReportNotTheSummaryLine) {
  // The real `ddpx train` through a wrapper that removes the summary line from the log: the trial still has its
  // steps/s, the one the report records.
  const std::filesystem::path dir = testing::fresh_dir("trial_without_summary");
  TrainTrial trial;
  trial.flags = {"--device", "cpu", "--model", "vit_tiny_test", "--batch", "2", "--steps", "6", "--warmup", "2",
                 "--workers", "1", "--cpu-threads", "1"};
  trial.env = {std::string("DDPX_REAL=") + DDPX_BINARY};
  trial.log_path = (dir / "trial.log").string();
  trial.report_path = (dir / "trial.json").string();
  const TrainTrialResult result =
      run_train_trial(std::string(DDPX_CLI_TEST_DIR) + "/train_without_summary.sh", trial);
  ASSERT_EQ(result.status, 0) << result.failure();
  const std::string log = testing::read_text(trial.log_path);
  EXPECT_EQ(log.find("summary:"), std::string::npos) << log;
  EXPECT_NE(log.find("step      6/6"), std::string::npos) << log;  // the rest of the output is there
  const RunReport report = load_run_report(trial.report_path);
  ASSERT_TRUE(report.throughput.has_value());
  ASSERT_TRUE(result.steps_per_s.has_value()) << result.failure();
  EXPECT_DOUBLE_EQ(*result.steps_per_s, report.throughput->steps_per_s);
  EXPECT_EQ(result.failure(), "");

  // A report path is required: the throughput has nowhere else to come from. Every caller gives one, so a trial
  // without one is ddpx's bug: an internal error naming it.
  trial.report_path.clear();
  try {
    (void)run_train_trial(DDPX_BINARY, trial);
    ADD_FAILURE() << "a trial without a report path ran";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("report path"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(TrainTrial, FlagLookupAndOwnedFlags) {
  const std::vector<std::string> flags = {"--ddp", "--batch", "4", "--nproc-per-node=2", "--batch", "8"};
  EXPECT_EQ(find_flag_value(flags, "--batch"), "8");  // the last one wins, as in train
  EXPECT_EQ(find_flag_value(flags, "--nproc-per-node"), "2");
  EXPECT_FALSE(find_flag_value(flags, "--model").has_value());
  EXPECT_TRUE(has_flag(flags, "--ddp"));
  EXPECT_FALSE(has_flag(flags, "--dd"));
  const std::string message =
      error_of([&] { reject_owned_flags(flags, {"--model=--models", "--batch=--batch"}, "bench"); });
  EXPECT_NE(message.find("--batch"), std::string::npos) << message;
  EXPECT_NE(message.find("ddpx bench"), std::string::npos) << message;
  EXPECT_EQ(error_of([&] { reject_owned_flags(flags, {"--model=--models"}, "bench"); }), testing::kNoError);
}

TEST(CollectiveBench, CheckValuesAreExactInEveryDtype) {
  // The all-reduce check expects n(n+1)/2 after summing rank+1: exact for these world sizes in f16 and bf16.
  for (CommDType dtype : {CommDType::f32, CommDType::f16, CommDType::bf16}) {
    std::vector<uint8_t> buffer(64 * comm_dtype_size(dtype));
    fill_elements(buffer.data(), 64, dtype, 36.0f);  // n = 8
    EXPECT_EQ(count_differing(buffer.data(), 64, dtype, 36.0f), 0) << comm_dtype_name(dtype);
    fill_elements(buffer.data(), 10, dtype, 1.0f);
    EXPECT_EQ(count_differing(buffer.data(), 64, dtype, 36.0f), 10) << comm_dtype_name(dtype);
  }
}

TEST(CudaDevices, BusIdsMatchAcrossCudaAndNvmlSpelling) {
  EXPECT_TRUE(same_pci_device("0000:19:00.0", "00000000:19:00.0"));
  EXPECT_TRUE(same_pci_device("0000:3b:00.0", "00000000:3B:00.0"));
  EXPECT_FALSE(same_pci_device("0000:19:00.0", "00000000:3B:00.0"));
  EXPECT_FALSE(same_pci_device("0001:19:00.0", "00000000:19:00.0"));
  EXPECT_FALSE(same_pci_device("", ""));
  const TopologyTable table = load_topology(testing::recorded("topo_2xh200_nv18.json"));
  EXPECT_EQ(topology_index_of(table, "0000:3B:00.0"), 1);
  EXPECT_EQ(topology_index_of(table, "0000:99:00.0"), -1);
}

TEST(ChildProcess, StatusEnvironmentAndOutputInTheLog) {
  const auto dir = testing::fresh_dir("child");
  const std::string log = (dir / "child.log").string();
  EXPECT_EQ(run_child_process({"sh", "-c", "echo out $DDPX_TEST_VALUE; echo err >&2; exit 3"},
                              {"DDPX_TEST_VALUE=42"}, log),
            3);
  EXPECT_EQ(testing::read_text(log), "out 42\nerr\n");
  EXPECT_EQ(run_child_process({"/nonexistent/program"}, {}, log), 127);
  EXPECT_EQ(file_tail(log, 5), "ddpx: could not execute the program (not found or not executable)\n");
  EXPECT_EQ(run_child_process({"sh", "-c", "kill -TERM $$"}, {}, log), 128 + 15);
  std::filesystem::remove_all(dir);
}

// bench's PyTorch anchor and data-bench's torchvision script: the flag's file, else the repository's copy (under
// the current directory, or above the executable: test_cli sits in the build folder inside the repository).
TEST(ChildProcess, HelperScriptsAreTheFlagsFileElseTheRepositorysCopy) {
  namespace fs = std::filesystem;
  EXPECT_EQ(find_helper_script(DDPX_CLI_TEST_DIR "/train_without_summary.sh", "--pytorch-script", "bench/x.py"),
            DDPX_CLI_TEST_DIR "/train_without_summary.sh");
  const std::string missing =
      error_of([] { find_helper_script("/no/such/anchor.py", "--pytorch-script", "bench/x.py"); });
  EXPECT_NE(missing.find("--pytorch-script /no/such/anchor.py: no such file"), std::string::npos) << missing;

  const fs::path here = fs::current_path();
  const fs::path dir = fs::temp_directory_path() / ("ddpx-helper-script-" + std::to_string(::getpid()));
  fs::create_directories(dir / "bench");
  { std::ofstream(dir / "bench" / "mine.py") << "print(1)\n"; }
  fs::current_path(dir);
  const std::string in_cwd = find_helper_script("", "--torchvision-script", "bench/mine.py");
  const std::string above_executable = find_helper_script("", "--pytorch-script", "bench/pt_vit_anchor.py");
  const std::string nowhere = find_helper_script("", "--pytorch-script", "bench/no_such_script.py");
  fs::current_path(here);
  fs::remove_all(dir);
  EXPECT_EQ(in_cwd, (dir / "bench" / "mine.py").string());
  EXPECT_TRUE(above_executable.ends_with("/bench/pt_vit_anchor.py")) << above_executable;
  EXPECT_TRUE(fs::exists(above_executable)) << above_executable;
  EXPECT_EQ(nowhere, "");
}

TEST(Launch, CpuOversubscriptionIsNotedNotRefused) {
  EXPECT_EQ(cpu_oversubscription_note(2, 2), "");
  EXPECT_EQ(cpu_oversubscription_note(4, 0), "");  // unknown core count: nothing to say
  EXPECT_NE(cpu_oversubscription_note(100, 2).find("100 CPU ranks on 2 hardware thread(s)"), std::string::npos);
}

}  // namespace
}  // namespace ddpx::cli
