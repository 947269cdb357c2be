// The registry of ddpx subcommands (commands.cpp: one row each). Each cmd_*.cpp adds its CLI11 flags to its
// subcommand and returns the function that runs it; main() runs the one the user picked.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <vector>

#include "cli/decimal_flags.hpp"
#include "cli/subcommand_config.hpp"
#include "cli/torchvision_flags.hpp"

namespace ddpx::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

struct CommandSet {
  std::vector<Command> commands;
  int run(const CLI::App& root) const {
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
    return 2;
  }
};

// How a subcommand's --help shows flag defaults: `shown` for every flag (the house's way: CLI11's
// always_capture_default), or `per_flag` where a flag asks for it (->capture_default_str()).
enum class HelpDefaults { shown, per_flag };

// The one flags object of subcommand `cmd`: CLI11 parses into it, the command's run reads it later (shared, as
// it outlives add_*_command). Call it before adding the flags: `defaults` applies to the flags added after it.
template <typename Flags>
std::shared_ptr<Flags> command_flags(CLI::App* cmd, HelpDefaults defaults) {
  if (defaults == HelpDefaults::shown) cmd->option_defaults()->always_capture_default();
  return std::make_shared<Flags>();
}

// The Command that calls run(flags) when the user picked `cmd`, after CLI11 filled the flags.
template <typename Flags, typename Run>
Command command_running(CLI::App* cmd, std::shared_ptr<Flags> flags, Run run) {
  return {cmd, [flags = std::move(flags), run = std::move(run)] { return run(*flags); }};
}

// Each adds the flags of the subcommand its row in commands.cpp made (name and description set) to `cmd`.
Command add_model_command(CLI::App* cmd);
Command add_eval_command(CLI::App* cmd);
Command add_train_command(CLI::App* cmd);
Command add_report_command(CLI::App* cmd);
Command add_topo_command(CLI::App* cmd);
Command add_allreduce_command(CLI::App* cmd);
Command add_bench_command(CLI::App* cmd);
Command add_tune_command(CLI::App* cmd);
Command add_predict_command(CLI::App* cmd);
Command add_pack_command(CLI::App* cmd);
Command add_data_bench_command(CLI::App* cmd);
Command add_data_preview_command(CLI::App* cmd);

// Adds every row's subcommand to `app`, in the rows' order (`ddpx --help` lists them so).
CommandSet register_commands(CLI::App& app);

}  // namespace ddpx::cli
