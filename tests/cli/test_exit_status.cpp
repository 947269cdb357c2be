// The ddpx executable's exit statuses (core/exit_status.hpp, docs/cli.md "Exit status"), on the real binary: a
// user error is 2, an internal error (DDPX_INTERNAL_ASSERT, injected through DDPX_TEST_FAULT=...:internal at the
// atomic write of --save) is 4 with a message that asks for a report, and the failed write leaves no file behind.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.hpp"
#include "core/exit_status.hpp"

namespace ddpx {
namespace {

using testing::run_ddpx;

const std::string kTinyRun = "train --device cpu --model vit_tiny_test --data learnable --batch 2 --steps 1 "
                             "--warmup 0 --workers 1 --cpu-threads 1 ";

TEST(ExitStatus, UserErrorIsTwo) {
  const auto r = run_ddpx("train --device cpu --model vit_tiny_test --batch 0 --steps 1");
  EXPECT_EQ(r.status, exit_status::user_error) << r.output;
  EXPECT_NE(r.output.find("ddpx: error: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
}

TEST(ExitStatus, InternalErrorIsFourAndAsksForAReport) {
  const auto dir = testing::fresh_dir("internal_error");
  const auto save = dir / "weights.safetensors";
  const auto r = run_ddpx(kTinyRun + "--save " + save.string(),
                          "DDPX_TEST_FAULT=write-weights.safetensors:0:internal");
  EXPECT_EQ(r.status, exit_status::internal_error) << r.output;
  EXPECT_NE(r.output.find("ddpx: internal error at src/core/test_fault.hpp:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("injected internal fault at write-weights.safetensors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("please report it"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("ddpx: error: "), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(save)) << "an interrupted atomic write must leave no file";
  std::filesystem::remove_all(dir);
}

TEST(ExitStatus, HelpListsTheStatuses) {
  const auto r = run_ddpx("--help");
  EXPECT_EQ(r.status, exit_status::success) << r.output;
  EXPECT_NE(r.output.find("Exit status: 0 success; 2 a bad flag"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("4 an internal error"), std::string::npos) << r.output;
}

// `ddpx ARGS` under an address-space limit of `kib` KiB (ulimit -v) and a 60 s timeout (status 124 if it hangs).
// OpenBLAS starts one thread per core when the library loads, before main() and --cpu-threads: on the 16-core GPU
// machine, under this limit, its 14th thread could not be created and OpenBLAS ended the process itself (status
// 130, before ddpx ran). One BLAS thread keeps the test about ddpx's own out-of-memory path on any core count.
testing::CliResult run_limited(const std::string& args, long kib) {
  const std::string command = "bash -c 'ulimit -v " + std::to_string(kib) + "; OPENBLAS_NUM_THREADS=1 exec timeout 60 " +
                              std::string(DDPX_BINARY) + " " + args + "' 2>&1";
  testing::CliResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) result.output += buffer;
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// Issue 37 item 7: under `ulimit -v` training printed its out-of-memory error and then never exited (a library's
// exit handler retried forever). The process ends at once now, with status 2 and the advice of its command.
TEST(ExitStatus, OutOfMemoryEndsTheProcessWithTheAdviceOfItsCommand) {
  // 1.2 GiB: the libraries load, a batch of 60,000 images (4 GiB by ddpx's own estimate) does not fit.
  const auto train = run_limited("train --device cpu --model vit_tiny_test --data learnable --batch 60000 --steps 1 "
                                 "--warmup 0 --workers 1 --cpu-threads 1", 1258291);
  EXPECT_EQ(train.status, exit_status::user_error) << train.output;
  EXPECT_NE(train.output.find("ddpx: error: out of memory: the model, --batch or the data do not fit"),
            std::string::npos) << train.output;
}

// Issue 37 item 7: a report listing 100,000 ranks let std::bad_alloc escape (SIGABRT, 134); the reader's bound
// refuses it by name before anything is built from it.
TEST(ExitStatus, AReportOfTooManyRanksIsRefusedByItsBound) {
  const auto dir = testing::fresh_dir("many_ranks");
  const auto report = dir / "many.json";
  {
    std::ofstream out(report);
    out << "{\"config\": {}, \"ranks\": [";
    for (int rank = 0; rank < 100000; ++rank) out << (rank ? ",{}" : "{}");
    out << "]}\n";
  }
  const auto r = run_ddpx("report " + report.string());
  EXPECT_EQ(r.status, exit_status::user_error) << r.output;
  EXPECT_NE(r.output.find("the file lists 100000 ranks; ddpx reads run reports of at most 16384 ranks"),
            std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

// Issue 37 item 6: `--steps 010` trained 8 steps (CLI11 read it in octal) and `--seed 09` was refused.
TEST(ExitStatus, IntegerFlagsAreDecimal) {
  const auto r = run_ddpx("train --device cpu --model vit_tiny_test --data learnable --batch 2 --steps 010 "
                          "--warmup 0 --workers 1 --cpu-threads 1 --seed 09 --log-every 100");
  EXPECT_EQ(r.status, exit_status::success) << r.output;
  EXPECT_NE(r.output.find("summary: 10 steps"), std::string::npos) << r.output;
  const auto hex = run_ddpx("train --device cpu --model vit_tiny_test --steps 0x10");
  EXPECT_EQ(hex.status, exit_status::user_error) << hex.output;
  EXPECT_NE(hex.output.find("'0x10' is not a"), std::string::npos) << hex.output;
}

}  // namespace
}  // namespace ddpx
