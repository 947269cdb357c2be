// Subcommand config files (see subcommand_config.hpp).
#include "cli/subcommand_config.hpp"

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json_parse.hpp"
#include "io/posix_file.hpp"

namespace ddpx::cli {
namespace {

// A config file is a few hundred bytes of flags; 1 MiB bounds an endless or wrong file (--config /dev/urandom is
// refused as a device before any byte is read, a 10 GB log by its size).
constexpr uint64_t kMaxConfigBytes = 1 << 20;

bool is_json(const std::string& file) { return file.size() >= 5 && file.compare(file.size() - 5, 5, ".json") == 0; }

// A flat JSON object {"bucket-mb": 25, "comm-hook": "bf16", "ddp": true} as config items (what `ddpx tune --out
// best.json` writes). Arrays give several values; nested objects are refused; a key given twice is refused, as
// in a .cfg file (nlohmann's parser would silently keep the last).
std::vector<CLI::ConfigItem> json_items(const std::string& file, const std::string& contents) {
  nlohmann::json j;
  std::set<std::string> top_level_keys;
  const auto refuse_duplicates = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && !top_level_keys.insert(parsed.get<std::string>()).second)
      throw CLI::ConfigError("--config " + file + ": key '" + parsed.get<std::string>() +
                             "' is set twice; keep one");
    return true;
  };
  try {
    j = parse_json(contents, "--config " + file, refuse_duplicates);
  } catch (const nlohmann::json::exception& e) {
    throw CLI::ConfigError("--config " + file + ": not valid JSON (" + e.what() + ")");
  } catch (const Error& e) {
    throw CLI::ConfigError(e.what());
  }
  if (!j.is_object()) throw CLI::ConfigError("--config " + file + ": expected a JSON object of flag names and values");
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

std::vector<CLI::ConfigItem> read_config_items(const std::string& file, const CLI::Config& formatter) {
  std::string text;
  try {
    text = read_small_file(file, kMaxConfigBytes, "--config");  // never blocks on a FIFO, never reads forever
  } catch (const Error& e) {
    throw CLI::ConfigError("--config " + file + ": cannot open the file (" + e.what() + "); check the path");
  }
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);  // a UTF-8 byte-order mark, as some editors write
  if (is_json(file)) return json_items(file, text);
  try {
    std::istringstream in(text);
    return formatter.from_config(in);
  } catch (const CLI::ParseError& e) {
    throw CLI::ConfigError("--config " + file + ": " + e.what());
  }
}

void read_config_for(CLI::App& cmd, std::function<bool(const std::string&)> skip_key) {
  CLI::App* app = &cmd;
  cmd.parse_complete_callback([app, skip_key] {
    const CLI::Option* config = app->get_config_ptr();
    if (config == nullptr || config->count() == 0) return;
    const auto formatter = app->get_config_formatter();
    for (const std::string& file : config->as<std::vector<std::string>>()) {
      const std::vector<CLI::ConfigItem> items = read_config_items(file, *formatter);
      std::set<std::string> seen;
      for (const CLI::ConfigItem& item : items) {
        if (item.name == "++" || item.name == "--") continue;  // section markers
        if (skip_key && skip_key(item.name)) continue;  // read already (torchvision's keys: torchvision_flags.hpp)
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
        // An empty list (`"model": []`, `batch =`) would hand the option no value at all; CLI11 then reads past
        // its empty results.
        if (option->get_expected_min() > 0 && item.inputs.empty())
          throw CLI::ConfigError("--config " + file + ": key '" + item.name + "' has no value; give one");
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
