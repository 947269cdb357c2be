// configs/torchvision/vit_*.cfg, torchvision's published ViT recipes as --config files (issue 50 item 3): each runs
// for a few steps on a small ImageFolder tree of Fashion-MNIST with a tiny model (--model vit_tiny_test, -b 32,
// --epochs 2, --lr-warmup-epochs 1, --device cpu on the command line, which wins over the file), and the run
// report's configuration equals the recipe's values field by field: every key of the file in the report's
// torchvision settings (the keys the command line overrode excepted), and the optimizer's own fields.
// Note: the recipes translate to native flags of the tvparts/tvaugment branches (--lr-step-unit, --repeated-augment,
// --ema-every, --trivial-augment, ...): these runs pass where those are merged.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "cli_runner.hpp"
#include "core/json_parse.hpp"
#include "fashion_files.hpp"
#include "support/scratch_dir.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::run_ddpx;

// The recipe file's key = value lines (comments and blank lines skipped).
std::map<std::string, std::string> recipe_lines(const fs::path& file) {
  std::map<std::string, std::string> values;
  std::istringstream in(testing::read_text(file));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find(" = ");
    EXPECT_NE(eq, std::string::npos) << file << ": " << line;
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 3);
  }
  return values;
}

// The torchvision setting a key of the file names ("weight-decay" is --wd's other spelling).
std::string setting_of(const std::string& key) { return key == "weight-decay" ? "--wd" : "--" + key; }

class TorchvisionRecipe : public ::testing::TestWithParam<const char*> {};

TEST_P(TorchvisionRecipe, RunsOnTinyDataAndTheReportHoldsItsValues) {
  if (!testing::fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const std::string name = GetParam();
  const fs::path recipe = fs::path(DDPX_SOURCE_DIR) / "configs" / "torchvision" / (name + ".cfg");
  const std::map<std::string, std::string> values = recipe_lines(recipe);
  ASSERT_EQ(values.at("model"), name);
  const fs::path dir = testing::fresh_dir("train", "torchvision_recipe_" + name);
  testing::write_fashion_folder(dir / "data" / "train", DataSplit::train, 256);  // torchvision's RASampler: >= 256
  testing::write_fashion_folder(dir / "data" / "val", DataSplit::test, 32);
  const std::set<std::string> overridden = {"model", "epochs", "batch-size", "lr-warmup-epochs"};
  const CliResult r = run_ddpx("train --config " + recipe.string() + " --data-path " + (dir / "data").string() +
                               " --model vit_tiny_test -b 32 --epochs 2 --lr-warmup-epochs 1 --device cpu -j 1 "
                               "--output-dir " + (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("a torchvision command line"), std::string::npos) << r.output;
  const nlohmann::json config =
      parse_json(testing::read_text(dir / "out" / "report.json"), "report.json").at("config");
  ASSERT_TRUE(config.contains("torchvision")) << config.dump();
  const nlohmann::json& settings = config["torchvision"]["settings"];
  for (const auto& [key, value] : values) {
    if (overridden.contains(key)) continue;
    const std::string setting = setting_of(key);
    ASSERT_TRUE(settings.contains(setting)) << name << ": " << key << " not in " << settings.dump();
    EXPECT_EQ(settings[setting], value) << name << ": " << key;
  }
  // The overrides, and the fields ddpx's report has of its own.
  EXPECT_EQ(config["model"], "vit_tiny_test");
  EXPECT_EQ(config["batch"], 32);
  EXPECT_EQ(config["optimizer"]["name"], values.contains("opt") ? values.at("opt") : "sgd");
  EXPECT_DOUBLE_EQ(config["optimizer"]["lr"].get<double>(), std::stod(values.at("lr")));
  const std::string wd = values.contains("wd") ? values.at("wd") : values.at("weight-decay");
  EXPECT_DOUBLE_EQ(config["optimizer"]["weight_decay"].get<double>(), std::stod(wd));
  EXPECT_EQ(config["precision"], "fp32");  // amp = true on --device cpu
}

INSTANTIATE_TEST_SUITE_P(Vit, TorchvisionRecipe,
                         ::testing::Values("vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"));

}  // namespace
}  // namespace ddpx
