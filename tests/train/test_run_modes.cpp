// The typed run modes (train/run_modes.hpp) and where `ddpx train` parses them (cli/cmd_train.cpp): every accepted
// spelling parses and spells back to itself, every refusal names the flag, the value and the choices, and the two
// spellings of PowerSGD's start reach the run report as one canonical spec.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_runner.hpp"
#include "dist/backend_registry.hpp"
#include "error_expect.hpp"
#include "report/step_record.hpp"
#include "train/run_modes.hpp"
#include "train/step_engine.hpp"
#include "train/train_options.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
namespace fs = std::filesystem;

TEST(RunModes, EveryAcceptedSpellingRoundTrips) {
  for (const char* text : {"cpu", "cuda"}) EXPECT_EQ(device_name(parse_device(text)), text);
  for (const char* text : {"auto", "nccl", "mpi", "gloo", "self"}) EXPECT_EQ(parse_backend(text).name(), text);
  for (const char* text : {"auto", "on", "off"}) {
    EXPECT_EQ(graph_policy_name(parse_graph_policy(text)), text);
    EXPECT_EQ(overlap_policy_name(parse_overlap_policy(text)), text);
  }
  for (const char* text : {"auto", "fp32"}) EXPECT_EQ(weight_grad_policy_name(parse_weight_grad_policy(text)), text);
  EXPECT_EQ(parse_backend("auto"), BackendChoice::automatic());
}

TEST(RunModes, RefusalsNameTheFlagTheValueAndTheChoices) {
  expect_error([] { parse_device("tpu"); }, {"--device 'tpu' is not known; choose cpu or cuda"});
  expect_error([] { parse_backend("ucc"); }, {"--backend 'ucc' is not known; choose auto, nccl, mpi, gloo or self"});
  expect_error([] { parse_graph_policy("yes"); }, {"--cuda-graph 'yes' is not known; choose auto, on or off"});
  expect_error([] { parse_overlap_policy("1"); }, {"--optimizer-overlap '1' is not known; choose auto, on or off"});
  expect_error([] { parse_weight_grad_policy("bf16"); }, {"--weight-grads 'bf16' is not known; choose auto or fp32"});
  expect_error([] { parse_device("CPU"); }, {"--device 'CPU'"});  // spellings are exact, as the flags always were
}

// What an engine is told is checked like train checks it (`ddpx eval` fills EngineOptions itself).
TEST(EngineOptions, ValidateNamesTheFlag) {
  EngineOptions cpu_bf16{.device = Device::cpu, .precision = Precision::bf16};
  expect_error([&] { cpu_bf16.validate(); }, {"--precision bf16 needs --device cuda"});
  EngineOptions no_batch{.batch = 0};
  expect_error([&] { no_batch.validate(); }, {"--batch", "0"});
  EngineOptions gpu_threads{.device = Device::cuda, .cpu_threads = 4};
  expect_error([&] { gpu_threads.validate(); }, {"--cpu-threads 4 applies to --device cpu only"});
  EngineOptions bad_optimizer;
  bad_optimizer.optimizer.momentum = 1.5f;
  expect_error([&] { bad_optimizer.validate(); }, {"--momentum", "[0, 1)"});
  EXPECT_NO_THROW((EngineOptions{.device = Device::cuda, .precision = Precision::bf16}.validate()));
}

// Note [bf16 weight gradients in their fp32 slots] (model_cuda/cuda_model.hpp): the engine is told to write bf16
// weight gradients only with --weight-grads auto, --precision bf16 on cuda, no reducer that reads the buckets and
// no accumulation; and `ddpx train` parses the flag into the options.
TEST(WeightGrads, Bf16OnlyWhereNothingReadsOrAddsIntoThem) {
  TrainOptions o;
  o.device = Device::cuda, o.precision = Precision::bf16;
  EXPECT_TRUE(weight_grads_in_bf16(o, /*reducer_reads_gradients=*/false));
  EXPECT_TRUE(engine_options(o, false).bf16_weight_grads);
  EXPECT_FALSE(weight_grads_in_bf16(o, /*reducer_reads_gradients=*/true)) << "a reading reducer needs fp32 buckets";
  EXPECT_FALSE(engine_options(o, true).bf16_weight_grads);
  TrainOptions accumulating = o;
  accumulating.grad_accum = 2;
  EXPECT_FALSE(weight_grads_in_bf16(accumulating, false)) << "bf16 slots cannot be added into";
  TrainOptions fp32_asked = o;
  fp32_asked.weight_grads = WeightGradPolicy::fp32;
  EXPECT_FALSE(weight_grads_in_bf16(fp32_asked, false));
  for (Precision p : {Precision::fp32, Precision::tf32}) {
    TrainOptions other = o;
    other.precision = p;
    EXPECT_FALSE(weight_grads_in_bf16(other, false)) << precision_name(p);
  }
  TrainOptions cpu = o;
  cpu.device = Device::cpu, cpu.precision = Precision::fp32;
  EXPECT_FALSE(weight_grads_in_bf16(cpu, false));
  EXPECT_NO_THROW(engine_options(o, false).validate());
}

// comm_hook_reads_bucket: only the allreduce hook at one rank leaves the buckets unread (it issues nothing), so only
// there does a run with a communicator keep bf16 weight gradients.
TEST(WeightGrads, OnlyTheAllreduceHookAtOneRankLeavesTheBucketsUnread) {
  TrainOptions o;
  o.device = Device::cuda, o.precision = Precision::bf16, o.ddp = true;
  EXPECT_FALSE(reducer_reads_gradients(o, /*with_communicator=*/false, 1)) << "no reducer";
  EXPECT_FALSE(reducer_reads_gradients(o, true, 1)) << "allreduce at one rank: nothing to average";
  EXPECT_TRUE(engine_options(o, reducer_reads_gradients(o, true, 1)).bf16_weight_grads);
  EXPECT_TRUE(reducer_reads_gradients(o, true, 2)) << "allreduce at two ranks sums fp32 buckets";
  EXPECT_FALSE(engine_options(o, reducer_reads_gradients(o, true, 2)).bf16_weight_grads);
  for (const char* hook : {"bf16", "fp16", "powersgd:4"}) {
    TrainOptions hooked = o;
    hooked.comm_hook = parse_comm_hook_spec(hook);
    EXPECT_TRUE(reducer_reads_gradients(hooked, true, 1)) << hook << " reads its buckets even at one rank";
    EXPECT_TRUE(reducer_reads_gradients(hooked, true, 4)) << hook;
  }
}

// `--comm-hook powersgd:R --powersgd-start S` and `--comm-hook powersgd:R:S` are one spec: the same canonical text
// in the run report (before, the report held the text as typed, without the start the run used).
TEST(RunModes, BothSpellingsOfPowerSgdsStartReachTheReportCanonically) {
  const fs::path dir = fs::temp_directory_path() / ("ddpx_test_train_run_modes_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string common = "train --model vit_tiny_test --batch 2 --steps 2 --warmup 0 --workers 1 --quiet --ddp "
                             "--backend self ";
  const std::string split = (dir / "split.json").string(), joined = (dir / "joined.json").string();
  const testing::CliResult a =
      testing::run_ddpx(common + "--comm-hook powersgd:2 --powersgd-start 5 --report " + split);
  ASSERT_EQ(a.status, 0) << a.output;
  const testing::CliResult b = testing::run_ddpx(common + "--comm-hook powersgd:2:5 --report " + joined);
  ASSERT_EQ(b.status, 0) << b.output;
  EXPECT_EQ(load_run_report(split).config.hook, "powersgd:2:5");
  EXPECT_EQ(load_run_report(joined).config.hook, "powersgd:2:5");
  // An explicit START wins over --powersgd-start.
  const std::string both = (dir / "both.json").string();
  const testing::CliResult c =
      testing::run_ddpx(common + "--comm-hook powersgd:2:7 --powersgd-start 5 --report " + both);
  ASSERT_EQ(c.status, 0) << c.output;
  EXPECT_EQ(load_run_report(both).config.hook, "powersgd:2:7");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
