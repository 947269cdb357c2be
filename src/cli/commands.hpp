// The registry of ddpx subcommands. Each cmd_*.cpp adds its CLI11 subcommand with its flags and returns the
// function that runs it; main() runs the one the user picked.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
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
