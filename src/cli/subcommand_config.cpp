// Subcommand config files (see subcommand_config.hpp).
#include "cli/subcommand_config.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json_parse.hpp"

namespace ddpx::cli {
namespace {

bool is_json(const std::string& file) { return file.size() >= 5 && file.compare(file.size() - 5, 5, ".json") == 0; }

// A flat JSON object {"bucket-mb": 25, "comm-hook": "bf16", "ddp": true} as config items (what `ddpx tune --out
// best.json` writes). Arrays give several values; nested objects are refused.
std::vector<CLI::ConfigItem> json_items(const std::string& file) {
  std::ifstream in(file);
  nlohmann::json j;
  // nlohmann keeps the last of two equal keys; the .cfg reader refuses a key set twice, and so does this one.
  std::set<std::string> top_level_keys;
  std::string duplicate;
  const auto find_duplicate = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && duplicate.empty() &&
        !top_level_keys.insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  try {
    j = parse_json(in, "--config " + file, find_duplicate);
  } catch (const nlohmann::json::exception& e) {
    throw CLI::ConfigError("--config " + file + ": not valid JSON (" + e.what() + ")");
  } catch (const Error& e) {
    throw CLI::ConfigError(e.what());
  }
  if (!j.is_object()) throw CLI::ConfigError("--config " + file + ": expected a JSON object of flag names and values");
  if (!duplicate.empty())
    throw CLI::ConfigError("--config " + file + ": key '" + duplicate + "' is set twice; keep one");
  const auto text = [&](const std::string& key, const nlohmann::json& value) -> std::string {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
    if (value.is_number()) return value.dump();
    throw CLI::ConfigError("--config " + file + ": key '" + key + "' must be a string, number or boolean, got " +
                           json_excerpt(value));
  };
  std::vector<CLI::ConfigItem> items;
  for (const auto& [key, value] : j.items()) {
    CLI::ConfigItem item;
    item.name = key;
    if (value.is_array()) {
      for (const auto& element : value) item.inputs.push_back(text(key, element));
    } else {
      item.inputs.push_back(text(key, value));
    }
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace

void read_config_for(CLI::App& cmd) {
  CLI::App* app = &cmd;
  cmd.parse_complete_callback([app] {
    const CLI::Option* config = app->get_config_ptr();
    if (config == nullptr || config->count() == 0) return;
    const auto formatter = app->get_config_formatter();
    for (const std::string& file : config->as<std::vector<std::string>>()) {
      if (!std::ifstream(file).good() || std::filesystem::is_directory(file))
        throw CLI::ConfigError("--config " + file + ": cannot open the file; check the path");
      std::vector<CLI::ConfigItem> items;
      if (is_json(file)) {
        items = json_items(file);
      } else {
        try {
          items = formatter->from_file(file);
        } catch (const CLI::ParseError& e) {
          throw CLI::ConfigError("--config " + file + ": " + e.what());
        }
      }
      std::set<std::string> seen;
      for (const CLI::ConfigItem& item : items) {
        if (item.name == "++" || item.name == "--") continue;  // section markers
        if (!item.parents.empty() && !(item.parents.size() == 1 && item.parents[0] == app->get_name()))
          throw CLI::ConfigError("--config " + file + ": section '" + item.fullname() + "' is not [" +
                                 app->get_name() + "]; write the keys at the top or under [" + app->get_name() + "]");
        CLI::Option* option = app->get_option_no_throw("--" + item.name);
        if (option == nullptr || option == config || option == app->get_help_ptr())
          throw CLI::ConfigError("--config " + file + ": unknown key '" + item.name + "'; keys are `ddpx " +
                                 app->get_name() + "` flags without the dashes (see --help)");
        // Silently taking the last of two values (or of `batch = 4 8`) would run something the file did not say.
        if (!seen.insert(item.name).second)
          throw CLI::ConfigError("--config " + file + ": key '" + item.name + "' is set twice (at the top and "
                                 "under [" + app->get_name() + "], or on two lines); keep one");
        if (option->get_expected_max() == 1 && item.inputs.size() > 1)
          throw CLI::ConfigError("--config " + file + ": key '" + item.name + "' takes one value, got " +
                                 std::to_string(item.inputs.size()));
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
