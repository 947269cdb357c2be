// The ddpx executable's exit statuses (core/exit_status.hpp, docs/cli.md "Exit status"), on the real binary: a
// user error is 2, an internal error (DDPX_INTERNAL_ASSERT, injected through DDPX_TEST_FAULT=...:internal at the
// atomic write of --save) is 4 with a message that asks for a report, and the failed write leaves no file behind.
#include <gtest/gtest.h>

#include <filesystem>
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

}  // namespace
}  // namespace ddpx
