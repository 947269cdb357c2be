// The registry of ddpx subcommands. Each cmd_*.cpp adds its CLI11 subcommand with its flags and returns the
// function that runs it; main() runs the one the user picked.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/decimal_flags.hpp"
#include "cli/subcommand_config.hpp"
#include "cli/torchvision_flags.hpp"

namespace ddpx::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

// How a subcommand's --help shows flag defaults: `shown` for every flag (the house's way: CLI11's
// always_capture_default on the subcommand), or `per_flag` where a flag asks for it (->capture_default_str()).
enum class HelpDefaults { shown, per_flag };

// The start every add_*_command shares: the subcommand `name` with its --help description, and the one flags
// object that CLI11 parses into and the command's run reads later (shared: it outlives add_*_command).
template <typename Flags>
struct NewCommand {
  std::shared_ptr<Flags> flags;
  CLI::App* cmd;
};

template <typename Flags>
NewCommand<Flags> new_command(CLI::App& app, const std::string& name, const std::string& description,
                              HelpDefaults defaults) {
  NewCommand<Flags> made{std::make_shared<Flags>(), app.add_subcommand(name, description)};
  if (defaults == HelpDefaults::shown) made.cmd->option_defaults()->always_capture_default();
  return made;
}

// The Command that calls run(flags) when the user picked `cmd`, after CLI11 filled the flags.
template <typename Flags, typename Run>
Command command_running(CLI::App* cmd, std::shared_ptr<Flags> flags, Run run) {
  return {cmd, [flags = std::move(flags), run = std::move(run)] { return run(*flags); }};
}

struct CommandSet {
  std::vector<Command> commands;
  int run(const CLI::App& root) const {
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
    return 2;
  }
};

Command add_model_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_train_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_topo_command(CLI::App& app);
Command add_allreduce_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_tune_command(CLI::App& app);
Command add_predict_command(CLI::App& app);
Command add_pack_command(CLI::App& app);
Command add_data_bench_command(CLI::App& app);
Command add_data_preview_command(CLI::App& app);

inline CommandSet register_commands(CLI::App& app) {
  CommandSet set;
  set.commands.push_back(add_model_command(app));
  set.commands.push_back(add_eval_command(app));
  set.commands.push_back(add_train_command(app));
  // `train --config FILE` (CLI11 2.1 ignores subcommand configs); torchvision's keys were translated before.
  read_config_for(*set.commands.back().app, translated_config_key);
  set.commands.push_back(add_report_command(app));
  set.commands.push_back(add_topo_command(app));
  set.commands.push_back(add_allreduce_command(app));
  set.commands.push_back(add_bench_command(app));
  set.commands.push_back(add_tune_command(app));
  set.commands.push_back(add_predict_command(app));
  set.commands.push_back(add_pack_command(app));
  set.commands.push_back(add_data_bench_command(app));
  set.commands.push_back(add_data_preview_command(app));
  read_integers_in_decimal(app);  // after every command's own checks: "010" is 10, never octal
  return set;
}

}  // namespace ddpx::cli
