// `ddpx eval --weights W --data SOURCE` on every image source train reads: a model trained a few steps on
// Fashion-MNIST idx scores the same top-1 on idx:, on a folder and on a pack of the same images, on one rank and on
// two, equal to the training run's own final --val figure; the model and the eval transform come from the weights'
// metadata (no --model); the per-class table, the confusion matrix and --json agree with the top-1 count.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "cli_runner.hpp"
#include "core/json_parse.hpp"
#include "fashion_files.hpp"
#include "io/param_safetensors.hpp"
#include "io/safetensors.hpp"
#include "model/model_registry.hpp"
#include "support/scratch_dir.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_ddpx;

// "top-1 84.12%" from the last line holding `marker` (train: "val loss", eval: "loss (mean cross-entropy)").
std::string last_top1(const std::string& output, const std::string& marker) {
  const size_t line = output.rfind(marker);
  if (line == std::string::npos) return "";
  std::smatch m;
  const std::string rest = output.substr(line, output.find('\n', line) - line);
  return std::regex_search(rest, m, std::regex("top-1 ([0-9.]+%)")) ? m[1].str() : "";
}

TEST(EvalSources, EverySourceOfTheSameImagesScoresTheTrainingRunsValFigure) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const fs::path dir = testing::fresh_dir("train", "eval_sources");
  const std::string fashion = testing::kFashionMnist, weights = (dir / "w.safetensors").string();
  const std::string model = "mlp:image=28,channels=1,layers=1,width=32,classes=10";
  const CliResult trained =
      run_ddpx("train --device cpu --model " + model + " --data idx:" + fashion + " --val idx:" + fashion +
               ":test --eval-every 40 --steps 40 --batch 64 --optimizer adamw --lr 0.003 --workers 1 --warmup 0 "
               "--seed 4 --save " +
               weights);
  ASSERT_EQ(trained.status, 0) << trained.output;
  const std::string val_top1 = last_top1(trained.output, "val loss");
  ASSERT_FALSE(val_top1.empty()) << trained.output;

  // The test split as a folder (class folders 0..9, lossless PNGs) and as a raw pack of that folder (the default
  // JPEG store is lossy: 2 of the 10,000 images then score otherwise).
  testing::write_fashion_folder(dir / "test", DataSplit::test, 0);
  const std::string pack = (dir / "test.pack").string();
  const CliResult packed = run_ddpx("pack folder:" + (dir / "test").string() + " " + pack + " --store raw");
  ASSERT_EQ(packed.status, 0) << packed.output;

  const std::string eval = "eval --weights " + weights + " --batch 64 --data ";
  for (const std::string& data : {"idx:" + fashion + ":test", "folder:" + (dir / "test").string(), "pack:" + pack}) {
    const CliResult r = run_ddpx(eval + data);
    ASSERT_EQ(r.status, 0) << data << ": " << r.output;
    EXPECT_NE(r.output.find(model + ", the model the file records"), std::string::npos) << r.output;
    EXPECT_EQ(last_top1(r.output, "loss (mean cross-entropy)"), val_top1) << data << ": " << r.output;
    EXPECT_NE(r.output.find("of 10000) | top-5 "), std::string::npos) << r.output;  // 10 classes: top-5 is shown
    EXPECT_NE(r.output.find("resize 28 + center crop 28"), std::string::npos) << data << ": " << r.output;
    EXPECT_NE(r.output.find("per-class accuracy"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("confusion matrix (rows: true class"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("9 Ankle boot"), std::string::npos) << r.output;  // the weights' class names
  }

  // Two ranks, each its share, every image counted once; each rank's batches start at its share's first image and
  // its BLAS has half the threads, so a logit may round otherwise and a near tie flip: the same top-1 within 3
  // images. --json holds the figures with the whole matrix, whose diagonal is the printed top-1.
  const std::string json = (dir / "eval.json").string();
#ifdef DDPX_HAVE_GLOO
  const std::string backend = "gloo";
#else
  const std::string backend = "mpi";  // a build without Gloo (as on the GPU machines) still runs the two ranks
#endif
  const CliResult two =
      run_ddpx(eval + "pack:" + pack + " --nproc-per-node 2 --backend " + backend + " --json " + json);
  ASSERT_EQ(two.status, 0) << two.output;
  const std::string two_top1 = last_top1(two.output, "loss (mean cross-entropy)");
  ASSERT_FALSE(two_top1.empty()) << two.output;
  EXPECT_LE(std::abs(std::stod(two_top1) - std::stod(val_top1)), 0.03) << two.output;
  EXPECT_NE(two.output.find("sharded over 2 ranks"), std::string::npos) << two.output;
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["images"], 10000);
  EXPECT_EQ(report["ranks"], 2);
  int64_t diagonal = 0, total = 0;
  for (size_t t = 0; t < 10; ++t)
    for (size_t p = 0; p < 10; ++p) {
      total += report["matrix"][t][p].get<int64_t>();
      diagonal += t == p ? report["matrix"][t][p].get<int64_t>() : 0;
    }
  EXPECT_EQ(total, 10000);
  EXPECT_EQ(fmt::format("{:.2f}%", 100.0 * static_cast<double>(diagonal) / 10000), two_top1);
  EXPECT_EQ(fmt::format("{:.2f}%", report["top1"].get<double>()), two_top1);
  EXPECT_EQ(report["classes"][9]["name"], "Ankle boot");

  // --json alone: the JSON on stdout, which parses; --out still writes the logits.
  const std::string logits = (dir / "logits.npy").string();
  const CliResult on_stdout = run_ddpx(eval + "idx:" + fashion + ":test --json --out " + logits);
  ASSERT_EQ(on_stdout.status, 0) << on_stdout.output;
  const size_t json_start = on_stdout.output.find("\n{\n");  // stdout's JSON, after stderr's tables
  ASSERT_NE(json_start, std::string::npos) << on_stdout.output;
  EXPECT_EQ(nlohmann::json::parse(on_stdout.output.substr(json_start))["images"], 10000) << on_stdout.output;
  EXPECT_TRUE(fs::exists(logits));
  fs::remove_all(dir);
}

// Weights that record no model need --model, said by name (a file that records "model", as the PyTorch fixtures
// do, gives it); a negative --crop-fraction, a source
// without labels and two inputs are refused naming the flags.
TEST(EvalSources, WhatEvalCannotTellIsRefusedNamingTheFlag) {
  const fs::path dir = testing::fresh_dir("train", "eval_refusals");
  // Weights with no model in their metadata, as other tools write them.
  const std::unique_ptr<Model> mlp = make_model("mlp_tiny_test");
  const std::vector<float> zeros(mlp->layout().buffer_size(), 0.f);
  const std::string bare = (dir / "bare.safetensors").string();
  write_safetensors(bare, layout_tensor_views(mlp->layout(), "", zeros.data()), {{"format", "pt"}});
  CliResult r = run_ddpx("eval --weights " + bare + " --data idx:/nowhere");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("does not record its model"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("give --model"), std::string::npos) << r.output;
  const std::string torch = std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/mlp_tiny_torch.safetensors";
  r = run_ddpx("eval --weights " + torch + " --data learnable --model mlp_tiny_test");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--data learnable: eval needs data with labels"), std::string::npos) << r.output;
  r = run_ddpx("eval --weights " + torch + " --data idx:/d --images x.npy");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("give one"), std::string::npos) << r.output;
  r = run_ddpx("eval --weights " + torch);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--data SOURCE"), std::string::npos) << r.output;
  // The PyTorch fixture records "model": eval builds it without --model.
  r = run_ddpx("eval --weights " + torch + " --data idx:/nowhere");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("mlp_tiny_test, the model the file records"), std::string::npos) << r.output;
  // issue 48: an output inside the data (a folder: its whole tree) is refused before anything is written.
  const fs::path images = dir / "images";
  fs::create_directories(images / "c0");
  fs::copy_file(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/images/gray.png", images / "c0" / "a.png");
  r = run_ddpx("eval --weights " + torch + " --data folder:" + images.string() + " --json " +
               (images / "c0" / "eval.json").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--data folder:"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(images / "c0" / "eval.json"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
