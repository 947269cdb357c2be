// read_config_for (`ddpx train --config FILE`) on a small command of its own: both file forms refuse what would
// silently pick one of two values.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cli/decimal_flags.hpp"
#include "cli/subcommand_config.hpp"

namespace ddpx::cli {
namespace {

struct ConfigRun {
  std::string error;  // the ConfigError's message; empty when parsing succeeded
  int steps = 0;
  uint64_t seed = 0;
};

ConfigRun parse_config(const std::string& name, const std::string& text, std::vector<std::string> args = {},
                       std::function<bool(const std::string&)> skip_key = {}) {
  std::string pattern = (std::filesystem::temp_directory_path() / "ddpx-config-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::filesystem::path file = std::filesystem::path(pattern) / name;
  std::ofstream(file) << text;
  ConfigRun run;
  CLI::App app{"ddpx"};
  CLI::App* cmd = app.add_subcommand("train", "train");
  cmd->set_config("--config", "", "config file");
  cmd->add_option("--steps", run.steps);
  cmd->add_option("--seed", run.seed);
  read_config_for(*cmd, skip_key);
  read_integers_in_decimal(app);
  try {
    args.insert(args.end(), {file.string(), "--config", "train"});  // reversed, as CLI11 takes it
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    run.error = e.what();
  }
  std::filesystem::remove_all(pattern);
  return run;
}

// Keys the caller read already (`ddpx train`'s torchvision keys, translated before the parse) are left alone: not
// refused as unknown, not applied; the others apply as ever.
TEST(SubcommandConfig, KeysTheCallerReadAreLeftAlone) {
  const auto torchvision_keys = [](const std::string& key) { return key == "batch-size" || key == "seed"; };
  const ConfigRun cfg = parse_config("tv.cfg", "batch-size = 512\nseed = 9\nsteps = 7\n", {}, torchvision_keys);
  EXPECT_EQ(cfg.error, "");
  EXPECT_EQ(cfg.steps, 7);
  EXPECT_EQ(cfg.seed, 0u);  // skipped: the caller applied it (a torchvision line puts --seed on the command line)
  const ConfigRun json = parse_config("tv.json", R"({"batch-size": 512, "steps": 3})", {}, torchvision_keys);
  EXPECT_EQ(json.error, "");
  EXPECT_EQ(json.steps, 3);
  // Without the predicate an unknown key is refused, as before.
  EXPECT_NE(parse_config("tv.cfg", "batch-size = 512\n").error.find("unknown key 'batch-size'"), std::string::npos);
}

TEST(SubcommandConfig, BothFormsApplyTheirKeys) {
  EXPECT_EQ(parse_config("a.cfg", "steps = 7\n").steps, 7);
  EXPECT_EQ(parse_config("a.json", R"({"steps": 7})").steps, 7);
}

// The .cfg reader refused a key set twice while the .json reader silently took the last value (issue 13).
TEST(SubcommandConfig, AKeySetTwiceIsRefusedInBothForms) {
  const ConfigRun cfg = parse_config("twice.cfg", "steps = 3\n[train]\nsteps = 2\n");
  EXPECT_NE(cfg.error.find("key 'steps' is set twice"), std::string::npos) << cfg.error;
  const ConfigRun json = parse_config("twice.json", R"({"steps": 3, "steps": 2})");
  EXPECT_NE(json.error.find("key 'steps' is set twice"), std::string::npos) << json.error;
  EXPECT_NE(json.error.find("twice.json"), std::string::npos) << json.error;
}

// fuzz_train_config found `{"steps": []}`: an empty list reached CLI11 as no value at all (undefined behaviour).
TEST(SubcommandConfig, AKeyWithAnEmptyListIsRefused) {
  const ConfigRun json = parse_config("empty.json", R"({"steps": []})");
  EXPECT_NE(json.error.find("empty.json: key 'steps' has no value"), std::string::npos) << json.error;
  EXPECT_EQ(json.steps, 0);
}

// Issue 37 item 6: CLI11 converts with base 0, so `--steps 010` trained 8 steps, `--seed 09` was "Could not convert"
// and hex passed. Integers are decimal on the command line and in config files alike.
TEST(SubcommandConfig, IntegersAreDecimalOnTheCommandLineAndInFiles) {
  const ConfigRun flags = parse_config("empty.cfg", "", {"09", "--seed", "010", "--steps"});  // reversed
  EXPECT_EQ(flags.error, "");
  EXPECT_EQ(flags.steps, 10);
  EXPECT_EQ(flags.seed, 9u);
  const ConfigRun file = parse_config("a.cfg", "steps = 0100\nseed = 010\n");
  EXPECT_EQ(file.error, "");
  EXPECT_EQ(file.steps, 100);
  EXPECT_EQ(file.seed, 10u);
  for (const std::string bad : {"0x10", "1e3", "--5", "8 ", "+-1"}) {
    const ConfigRun run = parse_config("empty.cfg", "", {bad, "--steps"});
    EXPECT_NE(run.error.find("is not a decimal integer"), std::string::npos) << bad << ": " << run.error;
  }
  EXPECT_NE(parse_config("empty.cfg", "", {"-1", "--seed"}).error.find("'-1'"), std::string::npos);
  EXPECT_NE(parse_config("hex.cfg", "steps = 0x10\n").error.find("is not a decimal integer"), std::string::npos);
}

// Issue 48 item 9: float flags took hexadecimal (`--lr 0x10` trained at 16) and an empty value as the default.
TEST(SubcommandConfig, FloatFlagsAreDecimalAndNeverEmpty) {
  CLI::App app{"ddpx"};
  CLI::App* cmd = app.add_subcommand("train", "train");
  double lr = 0.1;
  cmd->add_option("--lr", lr);
  read_integers_in_decimal(app);
  const auto error_of = [&](std::vector<std::string> args) {
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of({"2.5e-1", "--lr", "train"}), "");
  EXPECT_DOUBLE_EQ(lr, 0.25);
  for (const std::string bad : {"0x10", "0x1p3", "0X2"})
    EXPECT_NE(error_of({bad, "--lr", "train"}).find("is not a decimal number"), std::string::npos) << bad;
  EXPECT_NE(error_of({"", "--lr", "train"}).find("an empty value is not a number"), std::string::npos);
}

// Issue 37 item 9: a UTF-8 byte-order mark (as some editors write) made the first key "unknown".
TEST(SubcommandConfig, AByteOrderMarkIsNotPartOfTheFirstKey) {
  const ConfigRun run = parse_config("bom.cfg", "\xEF\xBB\xBFsteps = 12\n");
  EXPECT_EQ(run.error, "");
  EXPECT_EQ(run.steps, 12);
}

}  // namespace
}  // namespace ddpx::cli
