// Fuzz target: `ddpx train --config FILE` (read_config_for: CLI11's TOML/INI reader for .cfg, ddpx's flat-object
// reader for .json); the first input byte picks the form, the rest is the file.
// The reader must guarantee, for any bytes: no crash, no hang, no unbounded memory, and every refusal a
// CLI::ParseError (ConfigError naming the file and key, or the flag's own validation error), which ddpx prints as
// "ddpx: error: ..." with exit status 2, like a ddpx::Error. The command here has one flag of each kind `ddpx
// train` has (string, whole number with train's validator, unsigned, floating point, boolean flag, TakeLast
// policy), so the file meets the same option code paths without linking the trainer.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/arg_lists.hpp"
#include "cli/subcommand_config.hpp"
#include "fuzz_support.hpp"

namespace {

struct TrainLikeFlags {
  std::string model = "vit_small_test", comm_hook = "allreduce";
  int64_t batch = 32, steps = 100;
  uint64_t seed = 0;
  double lr = 0.01, bucket_mb = 25.0;
  bool ddp = false, nesterov = false;
};

void parse_with_config(const std::string& config_path) {
  TrainLikeFlags flags;
  CLI::App app{"ddpx"};
  CLI::App* cmd = app.add_subcommand("train", "train");
  cmd->set_config("--config", "", "read flags from a file");
  cmd->option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--model", flags.model);
  cmd->add_option("--comm-hook", flags.comm_hook);
  cmd->add_option("--batch", flags.batch);
  cmd->add_option("--steps", flags.steps);
  cmd->add_option("--seed", flags.seed);
  cmd->add_option("--lr", flags.lr);
  cmd->add_option("--bucket-mb", flags.bucket_mb);
  cmd->add_flag("--ddp", flags.ddp);
  cmd->add_flag("--nesterov", flags.nesterov);
  for (const char* name : {"--batch", "--steps", "--seed"}) {
    const bool allow_negative = std::string_view(name) != "--seed";
    cmd->get_option(name)->check(CLI::Validator(
        [allow_negative](std::string& text) { return ddpx::cli::whole_number_problem(text, allow_negative); },
        "INT"));
  }
  ddpx::cli::read_config_for(*cmd);
  // `train --steps 7 --config FILE`, reversed as CLI11 wants it: the command line must win over the file.
  std::vector<std::string> args = {config_path, "--config", "7", "--steps", "train"};
  try {
    app.parse(args);
  } catch (const CLI::ParseError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool json = data[0] & 1;
  const auto path = ddpx::fuzz::write_scratch_file(json ? "train.json" : "train.cfg", data + 1, size - 1);
  ddpx::fuzz::expect_clean_refusal([&] { parse_with_config(path.string()); });
  return 0;
}
