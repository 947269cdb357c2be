// Subcommand config files (see subcommand_config.hpp).
#include "cli/subcommand_config.hpp"

#include <fstream>
#include <string>
#include <vector>

namespace ddpx::cli {

void read_config_for(CLI::App& cmd) {
  CLI::App* app = &cmd;
  cmd.parse_complete_callback([app] {
    const CLI::Option* config = app->get_config_ptr();
    if (config == nullptr || config->count() == 0) return;
    const auto formatter = app->get_config_formatter();
    for (const std::string& file : config->as<std::vector<std::string>>()) {
      if (!std::ifstream(file).good())
        throw CLI::ConfigError("--config " + file + ": cannot open the file; check the path");
      std::vector<CLI::ConfigItem> items;
      try {
        items = formatter->from_file(file);
      } catch (const CLI::ParseError& e) {
        throw CLI::ConfigError("--config " + file + ": " + e.what());
      }
      for (const CLI::ConfigItem& item : items) {
        if (item.name == "++" || item.name == "--") continue;  // section markers
        if (!item.parents.empty() && !(item.parents.size() == 1 && item.parents[0] == app->get_name()))
          throw CLI::ConfigError("--config " + file + ": section '" + item.fullname() + "' is not [" +
                                 app->get_name() + "]; write the keys at the top or under [" + app->get_name() + "]");
        CLI::Option* option = app->get_option_no_throw("--" + item.name);
        if (option == nullptr || option == config)
          throw CLI::ConfigError("--config " + file + ": unknown key '" + item.name + "'; keys are `ddpx " +
                                 app->get_name() + "` flags without the dashes (see --help)");
        if (option->count() > 0) continue;  // the command line wins
        if (option->get_expected_min() == 0) {
          option->add_result(option->get_flag_value(item.name, formatter->to_flag(item)));
        } else {
          option->add_result(item.inputs);
        }
        option->run_callback();
      }
    }
  });
}

}  // namespace ddpx::cli
