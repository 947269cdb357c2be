// End-to-end training on the CPU: --ddp at one rank with accumulation equals plain accumulation, and the CLI
// refuses bad values with a message naming the flag. Resuming, the overlapped optimizer and a learnable run's loss
// are properties of every model family: test_family_properties.cpp's.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "error_expect.hpp"
#include "io/npy.hpp"
#include "io/param_safetensors.hpp"
#include "model/vit/vit_config.hpp"
#include "model/vit/vit_layout.hpp"
#include "saved_weights.hpp"
#include "support/scratch_dir.hpp"
#include "train/trainer.hpp"
#include "train_runs.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::family_run;
using testing::saved_weights;

TEST(Training, GradientAccumulationWithDdpRunsAndMatchesPlainAccumulation) {
  // One rank: DDP's average is the identity, so --ddp must not change a single weight, with accumulation too.
  const fs::path dir = testing::fresh_dir("train", "accum");
  TrainOptions plain = family_run("vit_tiny_test", "sgd"), ddp = family_run("vit_tiny_test", "sgd");
  plain.grad_accum = ddp.grad_accum = 3;
  plain.steps = ddp.steps = 4;
  ddp.ddp = true;
  plain.save = (dir / "plain.safetensors").string();
  ddp.save = (dir / "ddp.safetensors").string();
  run_training(plain);
  run_training(ddp);
  EXPECT_EQ(saved_weights(plain.save), saved_weights(ddp.save));
  fs::remove_all(dir);
}

using testing::CliResult;
CliResult run_cli(const std::string& args) { return testing::run_ddpx(args); }

TEST(Cli, BadValuesExitNonZeroNamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train --batch -4", "--batch"},
      {"train --steps 0", "--steps"},
      {"train --model vit_q_99", "unknown model 'vit_q_99'"},
      {"train --device tpu", "--device"},
      {"train --optimizer lion", "--optimizer"},
      {"train --lr -1", "--lr"},
      {"train --precision fp8", "--precision"},
      {"train --images /nonexistent/x.npy --labels /nonexistent/y.npy --model vit_tiny_test", "/nonexistent/x.npy"},
      {"train --model vit_tiny_test --resume /nonexistent/ckpt", "/nonexistent/ckpt"},
      {"train --model vit_tiny_test --resume d --load w.safetensors", "give one"},
      {"train --model vit_tiny_test --optimizer adamw --momentum 0.9", "--momentum applies to --optimizer sgd"},
      {"train --model vit_tiny_test --data learnable --images x.npy --labels y.npy", "--data learnable and --images"},
      {"train --model vit_tiny_test --nproc-per-node -1", "--nproc-per-node"},
      // Output paths are checked before training, not after it.
      {"train --model vit_tiny_test --save /nonexistent/dir/w.safetensors", "--save /nonexistent/dir/w.safetensors: the folder"},
      {"train --model vit_tiny_test --steps 9 --report /tmp", "--report /tmp: that is a folder"},
      // Whole numbers only, never clamped or wrapped by the flag parser.
      {"train --model vit_tiny_test --seed -1", "ddpx: error: --seed: '-1' is not a whole number"},
      {"train --model vit_tiny_test --steps 99999999999999999999", "--steps: '99999999999999999999'"},
      {"train --model vit_tiny_test --batch 4.5", "--batch: '4.5' is not a decimal integer"},
      {"eval --model vit_tiny_test --weights /nonexistent/w.safetensors --images x.npy", "/nonexistent/w.safetensors"},
      {"model --model custom:image=30,patch=8", "not divisible"},
      {"train --comm-hook zip --model vit_tiny_test --ddp", "--comm-hook"},
      {"train --model vit_tiny_test --profile-steps 5:2", "--profile-steps"},
      {"train --model vit_tiny_test --profile-steps 2:3", "--profile-steps 2:3 needs --device cuda"},
      {"train --model vit_tiny_test --prefetch 1", "--prefetch"},
      {"train --model vit_tiny_test --data synthetic-device", "--data synthetic-device needs --device cuda"},
      {"train --model vit_tiny_test --cuda-graph on", "--cuda-graph on needs --device cuda"},
      {"train --model vit_tiny_test --backend ucc", "--backend 'ucc' is not known; choose auto, nccl, mpi, gloo or self"},
      {"train --model vit_tiny_test --device cuda --backend gloo", "--backend gloo reduces host buffers: it needs --device cpu"},
      // Checked even when no reducer would use them, and never cast out of range.
      {"train --model vit_tiny_test --bucket-mb 1e30", "--bucket-mb must be between"},
      {"train --model vit_tiny_test --first-bucket-mb inf", "--first-bucket-mb must be between"},
      {"train --model vit_tiny_test --comm-timeout inf", "--comm-timeout must be between"},
      {"train --model vit_tiny_test --comm-hook foo", "--comm-hook 'foo' is not a hook"},
      {"train --model vit_tiny_test --steps 3 --report /tmp/never.json", "--report /tmp/never.json needs steps past"},
      // Divergence stops the run at the step it happens (every step is checked) instead of saving NaN weights.
      {"train --model vit_tiny_test --steps 3 --lr 1e30", "the loss is"},
      // Sizes that overflow 64-bit counts or cannot fit: refused before anything is allocated.
      {"model --model custom:layers=9223372036854775807", "layers = 9223372036854775807 is beyond the supported"},
      {"model --model custom:image=100000,patch=1,hidden=8,heads=1", "tokens per image, beyond the supported"},
      {"model --model custom:hidden=1000000,heads=1", "parameters, beyond the supported"},
      {"train --model vit_tiny_test --batch 99999999999", "lower --batch"},
  };
  for (const auto& [args, expected] : cases) {
    CliResult r = run_cli(args);
    EXPECT_NE(r.status, 0) << args;
    EXPECT_NE(r.output.find(expected), std::string::npos) << args << " printed: " << r.output;
  }
}

// eval checks what train checks: labels within the model's classes (an int64 label was cut to 32 bits and
// 2^32 + 3 scored as 3), --precision against --device, a positive --batch.
TEST(Cli, EvalChecksLabelsPrecisionAndBatch) {
  const fs::path dir = testing::fresh_dir("train", "eval");
  const std::string weights = (dir / "w.safetensors").string();
  ASSERT_EQ(run_cli("train --model vit_tiny_test --batch 2 --steps 1 --workers 1 --save " + weights).status, 0);
  const VitConfig config = parse_vit_spec("vit_tiny_test");
  const int64_t n = 3;
  write_npy((dir / "x.npy").string(),
            HostTensor::from_values<float>({n, config.channels, config.image_size, config.image_size},
                                           std::vector<float>(static_cast<size_t>(n * config.image_numel()), 0.5f)));
  write_npy((dir / "good.npy").string(), HostTensor::from_values<int64_t>({n}, std::vector<int64_t>{0, 1, 2}));
  write_npy((dir / "wide.npy").string(), HostTensor::from_values<int64_t>({n}, std::vector<int64_t>{0, 1, (int64_t{1} << 32) + 3}));
  const std::string eval = "eval --model vit_tiny_test --weights " + weights + " --images " + (dir / "x.npy").string();
  const CliResult good = run_cli(eval + " --labels " + (dir / "good.npy").string());
  EXPECT_EQ(good.status, 0) << good.output;
  EXPECT_NE(good.output.find("mean cross-entropy"), std::string::npos) << good.output;
  const CliResult wide = run_cli(eval + " --labels " + (dir / "wide.npy").string());
  EXPECT_EQ(wide.status, 2) << wide.output;
  EXPECT_NE(wide.output.find("label 4294967299 of image 2 is outside the model's classes [0, 10)"), std::string::npos)
      << wide.output;
  const CliResult bf16 = run_cli(eval + " --precision bf16");
  EXPECT_EQ(bf16.status, 2) << bf16.output;
  EXPECT_NE(bf16.output.find("--precision bf16 needs --device cuda"), std::string::npos) << bf16.output;
  write_npy((dir / "bytes.npy").string(),
            HostTensor::zeros(TensorDType::u8, {n, config.channels, config.image_size, config.image_size}));
  const CliResult bytes = run_cli("eval --model vit_tiny_test --weights " + weights + " --images " +
                                  (dir / "bytes.npy").string());
  EXPECT_EQ(bytes.status, 2) << bytes.output;
  EXPECT_NE(bytes.output.find("holds u8 values; ddpx reads float32 images"), std::string::npos) << bytes.output;
  const CliResult batch = run_cli(eval + " --batch 0");
  EXPECT_EQ(batch.status, 2) << batch.output;
  EXPECT_NE(batch.output.find("--batch must be a positive number"), std::string::npos) << batch.output;
  fs::remove_all(dir);
}

TEST(Cli, ReportCommandAnalysesASavedRun) {
  const fs::path dir = testing::fresh_dir("train", "report");
  const std::string report = (dir / "run.json").string(), trace = (dir / "trace.json").string();
  CliResult trained = run_cli("train --model vit_tiny_test --steps 12 --batch 4 --ddp --quiet --report " + report);
  ASSERT_EQ(trained.status, 0) << trained.output;
  CliResult r = run_cli("report " + report + " --trace " + trace);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("step breakdown"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("verdict: "), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(trace));
  CliResult missing = run_cli("report " + (dir / "none.json").string());
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.output.find("none.json"), std::string::npos) << missing.output;
  fs::remove_all(dir);
}

TEST(Cli, ModelCommandPrintsTheParameterCount) {
  CliResult r = run_cli("model --model vit_l_32 --brief");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("parameters: 306535400"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ddpx
