// cli/torchvision_flags: torchvision's train.py command line -> ddpx's, argv in, argv out. Every row of the table
// is tried (a row added without a case here fails EveryRowIsTried), the defaults of a torchvision command line, the
// two-spellings refusal, --config files with torchvision keys, and every refusal by name. No ddpx parse runs here:
// the native flags other branches add (--lr-step-unit, --repeated-augment, --ema-every, --trivial-augment, ...)
// need not exist for these tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/torchvision_flags.hpp"
#include "core/error.hpp"
#include "support/scratch_dir.hpp"

namespace ddpx::cli {
namespace {

namespace fs = std::filesystem;
using Args = std::vector<std::string>;

std::map<std::string, std::vector<ConfigEntry>>& config_files() {
  static std::map<std::string, std::vector<ConfigEntry>> files;
  return files;
}
std::vector<ConfigEntry> read_fake_config(const std::string& file) { return config_files().at(file); }

TorchvisionTranslation translate(const Args& args) { return translate_torchvision_args(args, read_fake_config); }

// Whether `needle` appears in `args` as consecutive items.
bool contains(const Args& args, const Args& needle) {
  return std::search(args.begin(), args.end(), needle.begin(), needle.end()) != args.end();
}

std::string joined(const Args& args) {
  std::string text;
  for (const std::string& a : args) text += (text.empty() ? "" : " ") + a;
  return text;
}

void expect_error(const Args& args, const std::string& part) {
  try {
    (void)translate(args);
    ADD_FAILURE() << "no error for: " << joined(args);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// torchvision's layout: D/train and D/val.
std::string imagenet_like_dir() {
  const fs::path dir = testing::fresh_dir("cli", "torchvision_flags_data");
  fs::create_directories(dir / "train" / "c0");
  fs::create_directories(dir / "val" / "c0");
  return dir.string();
}

TEST(TorchvisionFlags, DdpxsOwnCommandLineIsUnchanged) {
  const Args args = {"--device", "cpu", "--model", "vit_tiny_test", "--lr", "0.5", "--epochs", "2", "--batch", "8",
                     "--weight-decay", "0.1", "--resume", "auto", "--seed", "3", "--backend", "gloo"};
  const TorchvisionTranslation t = translate(args);
  EXPECT_FALSE(t.torchvision);
  EXPECT_EQ(t.args, args);
  EXPECT_TRUE(t.ddpx_args.empty());
}

// Every row: a value typed in a torchvision command line (after --ra-reps 3, train.py's default, which makes it
// one) and the ddpx flags it gives.
struct RowCase {
  Args typed;
  Args expected;  // consecutive in the translated args; empty: nothing of its own (checked, or read by another row)
};

std::map<std::string, RowCase> row_cases(const std::string& data) {
  return {
      {"--data-path", {{"--data-path", data}, {"--data", "folder:" + data + "/train", "--val", "folder:" + data + "/val"}}},
      {"--model", {{"--model", "vit_tiny_test"}, {"--model", "vit_tiny_test"}}},
      {"--device", {{"--device", "cpu"}, {"--device", "cpu"}}},
      {"--batch-size", {{"-b", "8"}, {"--batch", "8"}}},
      {"--epochs", {{"--epochs", "3"}, {"--epochs", "3"}}},
      {"--workers", {{"--workers", "4"}, {"--workers", "4"}}},
      {"--opt", {{"--opt", "adamw"}, {"--optimizer", "adamw"}}},
      {"--lr", {{"--lr", "0.003"}, {"--lr", "0.003"}}},
      {"--momentum", {{"--momentum", "0.8"}, {"--momentum", "0.8"}}},
      {"--wd", {{"--wd", "0.3"}, {"--weight-decay", "0.3"}}},
      {"--norm-weight-decay",
       {{"--norm-weight-decay", "0", "--bias-weight-decay", "0", "--transformer-embedding-decay", "0"}, {"--no-decay"}}},
      {"--bias-weight-decay", {{"--bias-weight-decay", "0", "--norm-weight-decay", "0.0",
                                "--transformer-embedding-decay", "0"}, {"--no-decay"}}},
      {"--transformer-embedding-decay", {{"--transformer-embedding-decay", "0", "--norm-weight-decay", "0",
                                          "--bias-weight-decay", "0"}, {"--no-decay"}}},
      {"--label-smoothing", {{"--label-smoothing", "0.11"}, {"--label-smoothing", "0.11"}}},
      {"--mixup-alpha", {{"--mixup-alpha", "0.2"}, {"--mixup", "0.2"}}},
      {"--cutmix-alpha", {{"--cutmix-alpha", "1.0"}, {"--cutmix", "1.0"}}},
      {"--lr-scheduler", {{"--lr-scheduler", "cosineannealinglr"}, {"--lr-schedule", "cosine", "--lr-step-unit", "epoch"}}},
      {"--lr-step-size", {{"--lr-step-size", "5"}, {"--lr-schedule", "step:5:0.1", "--lr-step-unit", "epoch"}}},
      {"--lr-gamma", {{"--lr-scheduler", "exponentiallr", "--lr-gamma", "0.9"},
                      {"--lr-schedule", "exponential:0.9", "--lr-step-unit", "epoch"}}},
      {"--lr-min", {{"--lr-min", "0.00001"}, {"--min-lr", "0.00001"}}},
      {"--lr-warmup-epochs", {{"--lr-warmup-epochs", "30"}, {"--lr-warmup-epochs", "30"}}},
      {"--lr-warmup-method", {{"--lr-warmup-method", "linear", "--lr-warmup-epochs", "2"}, {"--lr-warmup-method", "linear"}}},
      {"--lr-warmup-decay", {{"--lr-warmup-decay", "0.033"}, {"--lr-warmup-start", "0.033"}}},
      {"--auto-augment", {{"--auto-augment", "ra"}, {"--randaugment", "2,9"}}},
      {"--ra-magnitude", {{"--auto-augment", "ra", "--ra-magnitude", "15"}, {"--randaugment", "2,15"}}},
      {"--random-erase", {{"--random-erase", "0.1"}, {"--random-erase", "0.1"}}},
      {"--clip-grad-norm", {{"--clip-grad-norm", "1"}, {"--clip-grad-norm", "1"}}},
      {"--ra-sampler", {{"--ra-sampler"}, {"--repeated-augment", "3"}}},
      {"--ra-reps", {{"--ra-sampler", "--ra-reps", "4"}, {"--repeated-augment", "4"}}},
      {"--model-ema", {{"--model-ema", "--lr-warmup-epochs", "30"},
                       {"--ema-decay", "0.99998", "--ema-every", "32", "--ema-copy-epochs", "30", "--ema-adjust", "torchvision"}}},
      {"--model-ema-steps", {{"--model-ema", "--model-ema-steps", "8"}, {"--ema-every", "8"}}},
      {"--model-ema-decay", {{"--model-ema", "--model-ema-decay", "0.999"}, {"--ema-decay", "0.999"}}},
      {"--val-resize-size", {{"--val-resize-size", "232"}, {"--val-resize", "232"}}},
      {"--val-crop-size", {{"--val-crop-size", "16"}, {}}},
      {"--train-crop-size", {{"--train-crop-size", "16"}, {}}},
      {"--interpolation", {{"--interpolation", "bilinear"}, {}}},
      {"--amp", {{"--amp", "--device", "cuda"}, {"--precision", "bf16"}}},
      {"--output-dir", {{"--output-dir", "runs/a"},
                        {"--checkpoint-dir", "runs/a", "--checkpoint-every-epoch", "--report", "runs/a/report.json",
                         "--metrics", "runs/a/metrics.jsonl", "--save", "runs/a/model.safetensors"}}},
      {"--resume", {{"--resume", "runs/a"}, {"--resume", "runs/a"}}},
      {"--test-only", {{"--test-only", "--load", "w.safetensors"}, {"eval", "--weights", "w.safetensors"}}},
      {"--print-freq", {{"--print-freq", "5"}, {"--log-every", "5"}}},
      {"--seed", {{"--seed", "7"}, {"--seed", "7"}}},
  };
}

TEST(TorchvisionFlags, EveryRowIsTried) {
  const std::string data = imagenet_like_dir();
  const std::map<std::string, RowCase> cases = row_cases(data);
  std::set<std::string> tried;
  for (const TorchvisionFlag& row : torchvision_flags()) {
    const std::string name(std::string_view(row.spellings).substr(0, row.spellings.find(',')));
    if (!row.refusal.empty()) {
      // A refused row: typed, an error naming it and what to use instead.
      Args args = {"--ra-reps", "3", name};
      if (row.kind != TorchvisionFlag::Kind::flag) args.push_back(name == "--backend" ? "PIL" : "1");
      expect_error(args, name + " (torchvision's train.py) is not implemented in ddpx: " + std::string(row.refusal));
      tried.insert(name);
      continue;
    }
    const auto it = cases.find(name);
    ASSERT_NE(it, cases.end()) << name << " has no case in row_cases()";
    Args args = {"--ra-reps", "3"};
    args.insert(args.end(), it->second.typed.begin(), it->second.typed.end());
    const TorchvisionTranslation t = translate(args);
    EXPECT_TRUE(t.torchvision) << name;
    EXPECT_TRUE(contains(t.args, it->second.expected)) << name << ": " << joined(t.args);
    // The torchvision spelling itself never reaches ddpx's parse (except where ddpx spells it the same).
    if (is_torchvision_only(name)) EXPECT_EQ(std::count(t.args.begin(), t.args.end(), name), 0) << joined(t.args);
    tried.insert(name);
  }
  EXPECT_EQ(tried.size(), torchvision_flags().size());
}

TEST(TorchvisionFlags, LeftOutSettingsTakeTrainPysDefaultsAndAreListed) {
  const TorchvisionTranslation t = translate({"-b", "8", "--device", "cpu"});
  ASSERT_TRUE(t.torchvision);
  for (const Args& expected : std::vector<Args>{{"--batch", "8"}, {"--device", "cpu"}, {"--epochs", "90"},
                                               {"--workers", "16"}, {"--optimizer", "sgd"}, {"--lr", "0.1"},
                                               {"--momentum", "0.9"}, {"--weight-decay", "1e-4"},
                                               {"--label-smoothing", "0"}, {"--mixup", "0"}, {"--cutmix", "0"},
                                               {"--lr-schedule", "step:30:0.1", "--lr-step-unit", "epoch"},
                                               {"--lr-warmup-epochs", "0"}, {"--lr-warmup-start", "0.01"},
                                               {"--min-lr", "0"}, {"--log-every", "10"}})
    EXPECT_TRUE(contains(t.args, expected)) << joined(expected) << " in " << joined(t.args);
  // Off by default: no EMA, no sampler, no augmentation policy, no --amp, no decay exemption, no warm-up method
  // (no warm-up), no --val-resize (ddpx's int(size / 0.875) is train.py's 256 at 224).
  for (const char* absent : {"--ema-decay", "--repeated-augment", "--randaugment", "--precision", "--no-decay",
                             "--lr-warmup-method", "--val-resize", "--clip-grad-norm", "--resume", "--seed",
                             "--random-erase", "--trivial-augment", "--auto-augment-policy"})
    EXPECT_EQ(std::count(t.args.begin(), t.args.end(), absent), 0) << absent << " in " << joined(t.args);
  const std::string line = t.line();
  EXPECT_NE(line.find("a torchvision command line"), std::string::npos) << line;
  for (const char* d : {"--lr 0.1", "--momentum 0.9", "--wd 1e-4", "--epochs 90", "--opt sgd", "--lr-scheduler steplr",
                        "--lr-step-size 30", "--lr-gamma 0.1", "--lr-warmup-method constant", "--lr-warmup-decay 0.01",
                        "--model-ema-steps 32", "--model-ema-decay 0.99998", "--ra-magnitude 9", "--ra-reps 3",
                        "--interpolation bilinear", "--print-freq 10", "--workers 16"})
    EXPECT_NE(line.find(d), std::string::npos) << d << " not in: " << line;
  EXPECT_EQ(line.find("--batch-size 32"), std::string::npos) << line;  // given
  EXPECT_EQ(line.find("--device cuda"), std::string::npos) << line;    // given
  EXPECT_EQ(line.find('\n'), std::string::npos);                       // one line
  // The record: every setting in effect.
  const std::map<std::string, std::string> settings(t.settings.begin(), t.settings.end());
  EXPECT_EQ(settings.at("--batch-size"), "8");
  EXPECT_EQ(settings.at("--lr"), "0.1");
  EXPECT_EQ(settings.at("--model-ema"), "false");
  EXPECT_EQ(t.ddpx_args, Args(t.args.begin(), t.args.begin() + static_cast<std::ptrdiff_t>(t.ddpx_args.size())));
  // torchvision's default device is cuda.
  EXPECT_TRUE(contains(translate({"-b", "8"}).args, {"--device", "cuda"}));
}

TEST(TorchvisionFlags, DdpxsFlagsInATorchvisionCommandLineKeepTheirPlaceAndCountAsGiven) {
  const TorchvisionTranslation t =
      translate({"--wd", "0.3", "--steps", "5", "--nproc-per-node", "2", "--lr-schedule", "cosine", "--batch", "4"});
  ASSERT_TRUE(t.torchvision);
  EXPECT_TRUE(contains(t.args, {"--steps", "5", "--nproc-per-node", "2", "--lr-schedule", "cosine", "--batch", "4"}))
      << joined(t.args);
  // --steps stands for --epochs' default, --lr-schedule for --lr-scheduler's, --batch for -b's.
  for (const char* absent : {"--epochs", "--lr-step-unit"})
    EXPECT_EQ(std::count(t.args.begin(), t.args.end(), absent), 0) << absent << " in " << joined(t.args);
  EXPECT_EQ(std::count(t.args.begin(), t.args.end(), "--batch"), 1) << joined(t.args);
}

TEST(TorchvisionFlags, TwoSpellingsOfOneSettingAreRefusedNamingBoth) {
  expect_error({"-b", "8", "--batch-size", "8"}, "-b and --batch-size: both set --batch-size");
  expect_error({"-b", "8", "--batch", "8"}, "-b and --batch: both set --batch-size");
  expect_error({"--wd", "0.1", "--weight-decay", "0.1"}, "--wd and --weight-decay: both set --wd");
  expect_error({"--opt", "sgd", "--optimizer", "adamw"}, "--opt and --optimizer");
  expect_error({"--data-path", imagenet_like_dir(), "--val", "idx:x"}, "--data-path and --val");
  expect_error({"--mixup-alpha", "0.2", "--mixup", "0.2"}, "--mixup-alpha and --mixup");
  expect_error({"--epochs", "2", "--steps", "4", "-j", "1"}, "--epochs and --steps");
  expect_error({"--output-dir", "o", "--report", "r.json"}, "--output-dir and --report");
  // The same spelling twice: the last wins, as for every ddpx flag.
  EXPECT_TRUE(contains(translate({"-b", "8", "-b", "16"}).args, {"--batch", "16"}));
}

TEST(TorchvisionFlags, ConfigFilesMayUseTorchvisionKeysAndTheCommandLineWins) {
  config_files()["vit.cfg"] = {{"opt", {"adamw"}}, {"lr", {"0.003"}}, {"batch-size", {"512"}}, {"amp", {"true"}},
                               {"epochs", {"300"}}, {"seed", {"1"}}};
  TorchvisionTranslation t = translate({"--config", "vit.cfg", "-b", "8", "--steps", "3", "--device", "cpu"});
  ASSERT_TRUE(t.torchvision);
  EXPECT_TRUE(contains(t.args, {"--config", "vit.cfg"}));  // still read by ddpx's parse, for its own keys
  EXPECT_TRUE(contains(t.args, {"--optimizer", "adamw"}));
  EXPECT_TRUE(contains(t.args, {"--lr", "0.003"}));
  EXPECT_TRUE(contains(t.args, {"--batch", "8"}));  // the command line's
  EXPECT_EQ(std::count(t.args.begin(), t.args.end(), "--epochs"), 0) << joined(t.args);  // --steps wins
  EXPECT_EQ(std::count(t.args.begin(), t.args.end(), "--precision"), 0) << joined(t.args);  // --amp on the CPU
  EXPECT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.line().find("--amp on --device cpu: fp32"), std::string::npos) << t.line();
  // A file with only ddpx keys changes nothing; its ddpx keys count as given in a torchvision command line.
  config_files()["ddpx.cfg"] = {{"batch", {"4"}}, {"lr", {"0.5"}}};
  EXPECT_FALSE(translate({"--config", "ddpx.cfg", "--steps", "3"}).torchvision);
  t = translate({"--config=ddpx.cfg", "--opt", "adamw"});
  EXPECT_EQ(std::count(t.args.begin(), t.args.end(), "--batch"), 0) << joined(t.args);  // no default -b 32
  EXPECT_TRUE(contains(t.args, {"--lr", "0.5"}));  // lr is torchvision's too: read here, skipped by read_config_for
  // Two spellings in one file are refused as on the command line.
  config_files()["both.cfg"] = {{"batch-size", {"4"}}, {"batch", {"8"}}};
  expect_error({"--config", "both.cfg"}, "--batch-size and --batch (in a --config file): both set --batch-size");
}

TEST(TorchvisionFlags, WhatDdpxDoesNotImplementIsRefusedByName) {
  const std::string data = imagenet_like_dir();
  expect_error({"--auto-augment", "augmix"}, "--auto-augment augmix: ddpx has ra (RandAugment), ta_wide");
  expect_error({"--auto-augment", "autoaugment"}, "augmix is not built");
  EXPECT_TRUE(contains(translate({"--auto-augment", "ta_wide"}).args, {"--trivial-augment"}));
  EXPECT_TRUE(contains(translate({"--auto-augment", "imagenet"}).args, {"--auto-augment-policy", "imagenet"}));
  EXPECT_TRUE(contains(translate({"--auto-augment", "svhn"}).args, {"--auto-augment-policy", "svhn"}));
  expect_error({"--interpolation", "bicubic"}, "--interpolation bicubic: ddpx's loader resizes with antialiased "
                                               "bilinear only");
  expect_error({"--opt", "rmsprop"}, "--opt rmsprop: ddpx has sgd, sgd_nesterov and adamw");
  expect_error({"--opt", "adamw", "--momentum", "0.9"}, "--momentum 0.9 with --opt adamw: train.py gives momentum "
                                                       "to SGD only");
  // AdamW's runs leave the momentum default out (ddpx refuses --momentum with adamw); SGD's take it.
  const Args adamw = translate({"--opt", "adamw"}).args;
  EXPECT_EQ(std::count(adamw.begin(), adamw.end(), "--momentum"), 0) << joined(adamw);
  EXPECT_TRUE(contains(translate({"--opt", "sgd_nesterov"}).args, {"--optimizer", "sgd", "--nesterov"}));
  EXPECT_TRUE(contains(translate({"--opt", "sgd_nesterov"}).args, {"--momentum", "0.9"}));
  expect_error({"--lr-scheduler", "onecycle", "-j", "1"}, "--lr-scheduler onecycle: torchvision's train.py has steplr");
  expect_error({"--lr-warmup-method", "cosine", "--lr-warmup-epochs", "2", "-j", "1"},
               "--lr-warmup-method cosine: torchvision's train.py has linear and constant");
  expect_error({"--resume", "runs/checkpoint.pth", "-j", "1"}, "--resume runs/checkpoint.pth: ddpx resumes its own "
                                                               "checkpoints, not torch.save files");
  expect_error({"--norm-weight-decay", "0.1"}, "--norm-weight-decay 0.1, --bias-weight-decay unset, "
                                               "--transformer-embedding-decay unset: ddpx exempts");
  expect_error({"--norm-weight-decay", "0", "--bias-weight-decay", "0.05"}, "--bias-weight-decay 0.05");
  expect_error({"--data-path", data + "/train"}, "--data-path " + data + "/train: torchvision's layout is");
  expect_error({"--backend", "PIL"}, "--backend (torchvision's train.py) is not implemented in ddpx");
  expect_error({"--test-only", "-j", "1"}, "--test-only: give the weights to evaluate");
  // Bad values name the torchvision flag.
  expect_error({"-b", "1.5"}, "-b '1.5': give a whole number >= 0");
  expect_error({"--lr", "abc", "-j", "1"}, "--lr 'abc': give a number >= 0");
  expect_error({"--mixup-alpha", "-1"}, "--mixup-alpha '-1': give a number >= 0");
  expect_error({"--lr-gamma", "nan"}, "--lr-gamma 'nan'");
  expect_error({"--wd"}, "--wd needs a value");
  expect_error({"--amp=true", "-j", "1"}, "--amp is a switch");
  // Equal to --wd counts as unset (torchvision's None): no exemption, no refusal.
  const Args as_wd = translate({"--wd", "0.05", "--norm-weight-decay", "0.05"}).args;
  EXPECT_EQ(std::count(as_wd.begin(), as_wd.end(), "--no-decay"), 0) << joined(as_wd);
}

TEST(TorchvisionFlags, TestOnlyEvaluatesTheCheckpointOnTheValidationSet) {
  const std::string data = imagenet_like_dir();
  const fs::path run = testing::fresh_dir("cli", "torchvision_test_only");
  for (const char* name : {"checkpoint-4.safetensors", "checkpoint-12.safetensors", "checkpoint-8.safetensors"})
    std::ofstream(run / name) << "x";
  const TorchvisionTranslation t = translate({"--data-path", data, "--model", "vit_tiny_test", "--device", "cpu",
                                              "--test-only", "--resume", run.string(), "-b", "16"});
  ASSERT_TRUE(t.test_only);
  EXPECT_EQ(t.args.front(), "eval");
  EXPECT_TRUE(contains(t.args, {"--weights", (run / "checkpoint-12.safetensors").string()})) << joined(t.args);
  EXPECT_TRUE(contains(t.args, {"--data", "folder:" + data + "/val"})) << joined(t.args);
  EXPECT_TRUE(contains(t.args, {"--model", "vit_tiny_test"})) << joined(t.args);
  EXPECT_TRUE(contains(t.args, {"--batch", "16"})) << joined(t.args);
  expect_error({"--test-only", "--resume", testing::fresh_dir("cli", "torchvision_empty").string()},
               "the folder has no ddpx checkpoint");
}

TEST(TorchvisionFlags, OnlyTorchvisionsOwnSpellingsMakeATorchvisionCommandLine) {
  for (const char* own : {"--lr", "--model", "--epochs", "--weight-decay", "--resume", "--seed", "--device",
                          "--workers", "--label-smoothing", "--clip-grad-norm", "--lr-warmup-epochs", "--backend"})
    EXPECT_FALSE(is_torchvision_only(own)) << own;
  for (const char* theirs : {"-b", "--batch-size", "--wd", "--opt", "--data-path", "--model-ema", "batch-size", "-j"})
    EXPECT_TRUE(is_torchvision_only(theirs)) << theirs;
  // ddpx's --backend is the communication backend: gloo passes through.
  EXPECT_TRUE(contains(translate({"--backend", "gloo", "-j", "1"}).args, {"--backend", "gloo"}));
}

// configs/torchvision/*.cfg's key = value lines (the end-to-end runs are tests/train/test_torchvision_recipes.cpp).
std::vector<ConfigEntry> read_cfg(const std::string& file) {
  std::vector<ConfigEntry> entries;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find(" = ");
    if (eq != std::string::npos) entries.push_back({line.substr(0, eq), {line.substr(eq + 3)}});
  }
  return entries;
}

TEST(TorchvisionFlags, ThePublishedViTRecipesBecomeTheseDdpxFlags) {
  const std::string dir = std::string(DDPX_SOURCE_DIR) + "/configs/torchvision/";
  const auto translated = [&](const std::string& name) {
    return translate_torchvision_args({"--config", dir + name + ".cfg"}, read_cfg).args;
  };
  const std::vector<Args> adamw_recipe = {
      {"--epochs", "300"}, {"--batch", "512"}, {"--optimizer", "adamw"}, {"--lr", "0.003"},
      {"--weight-decay", "0.3"}, {"--label-smoothing", "0.11"}, {"--mixup", "0.2"}, {"--cutmix", "1.0"},
      {"--lr-schedule", "cosine", "--lr-step-unit", "epoch"}, {"--lr-warmup-epochs", "30"},
      {"--lr-warmup-method", "linear"}, {"--lr-warmup-start", "0.033"}, {"--clip-grad-norm", "1"},
      {"--repeated-augment", "3"}, {"--ema-decay", "0.99998", "--ema-every", "32", "--ema-copy-epochs", "30",
                                     "--ema-adjust", "torchvision"},
      {"--precision", "bf16"}, {"--device", "cuda"}};
  for (const char* name : {"vit_b_16", "vit_b_32", "vit_l_32", "vit_h_14"}) {
    const Args args = translated(name);
    EXPECT_TRUE(contains(args, {"--model", name})) << name;
    for (const Args& expected : adamw_recipe) EXPECT_TRUE(contains(args, expected)) << name << ": " << joined(expected);
    EXPECT_EQ(std::count(args.begin(), args.end(), "--momentum"), 0) << name;
    EXPECT_EQ(std::count(args.begin(), args.end(), "--no-decay"), 0) << name;
  }
  for (const char* name : {"vit_b_16", "vit_l_32", "vit_h_14"})
    EXPECT_TRUE(contains(translated(name), {"--randaugment", "2,9"})) << name;
  EXPECT_TRUE(contains(translated("vit_b_32"), {"--auto-augment-policy", "imagenet"}));
  const Args l16 = translated("vit_l_16");
  for (const Args& expected : std::vector<Args>{
           {"--model", "vit_l_16"}, {"--epochs", "600"}, {"--batch", "128"}, {"--optimizer", "sgd"},
           {"--lr", "0.5"}, {"--momentum", "0.9"}, {"--weight-decay", "0.00002"}, {"--no-decay"},
           {"--lr-schedule", "cosine", "--lr-step-unit", "epoch"}, {"--lr-warmup-epochs", "5"},
           {"--lr-warmup-method", "linear"}, {"--lr-warmup-start", "0.01"}, {"--label-smoothing", "0.1"},
           {"--mixup", "0.2"}, {"--cutmix", "1.0"}, {"--trivial-augment"}, {"--random-erase", "0.1"},
           {"--clip-grad-norm", "1"}, {"--repeated-augment", "3"}, {"--val-resize", "232"},
           {"--ema-decay", "0.99998", "--ema-every", "32", "--ema-copy-epochs", "5", "--ema-adjust", "torchvision"}})
    EXPECT_TRUE(contains(l16, expected)) << joined(expected) << " in " << joined(l16);
  EXPECT_EQ(std::count(l16.begin(), l16.end(), "--precision"), 0);  // no --amp in vit_l_16's line
}

TEST(TorchvisionFlags, HelpListsTheAcceptedSpellingsWithoutLookingLikeFlagRows) {
  const std::string help = torchvision_help_text();
  for (const char* spelling : {"--data-path", "--batch-size/-b", "--wd/--weight-decay", "--model-ema", "--ra-sampler"})
    EXPECT_NE(help.find(spelling), std::string::npos) << spelling;
  EXPECT_EQ(help.find("--sync-bn"), std::string::npos);  // refused ones are not listed as accepted
}

}  // namespace
}  // namespace ddpx::cli
