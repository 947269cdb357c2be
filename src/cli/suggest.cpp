// Command-line slips explained (see suggest.hpp).
#include "cli/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace ddpx::cli {
namespace {

std::vector<std::string> command_names(const CLI::App& root) {
  std::vector<std::string> names;
  for (const CLI::App* sub : root.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// Every spelling of every flag of `cmd` ("--steps", "-b"), the help flag included.
std::vector<std::string> flag_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* option : cmd.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

// "--bucket-cap-mb" -> bucket, cap, mb.
std::vector<std::string> words(std::string_view name) {
  std::vector<std::string> parts;
  std::string part;
  for (const char c : name) {
    if (c == '-' || c == '_') {
      if (!part.empty()) parts.push_back(part), part.clear();
    } else {
      part += c;
    }
  }
  if (!part.empty()) parts.push_back(part);
  return parts;
}

bool looks_like_number(std::string_view text) {
  return !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) ||
                           (text.size() > 1 && (text[0] == '-' || text[0] == '.') &&
                            std::isdigit(static_cast<unsigned char>(text[1]))));
}

// "25MB", "1.5 GiB", "10s": digits followed by letters.
bool number_with_unit(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0 || i == text.size()) return false;
  while (i < text.size() && text[i] == ' ') ++i;
  return i < text.size() && std::all_of(text.begin() + static_cast<std::ptrdiff_t>(i), text.end(),
                                        [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
}

std::string unknown_flag_message(const CLI::App& cmd, const std::string& flag) {
  const std::string where = fmt::format("ddpx {}", cmd.get_name());
  if (const std::optional<FlagAlias> alias = flag_alias(flag)) {
    const std::string_view ddpx_flag = alias->ddpx.substr(0, alias->ddpx.find(' '));
    if (cmd.get_option_no_throw(std::string(ddpx_flag)) != nullptr)
      return fmt::format("{}: unknown flag {}; ddpx spells it {} ({}). ('{} --help' lists the flags)", where, flag,
                         alias->ddpx, alias->note, where);
  }
  if (const auto near = closest_name(flag, flag_names(cmd)))
    return fmt::format("{}: unknown flag {}; did you mean {}? ('{} --help' lists the flags)", where, flag, *near,
                       where);
  return fmt::format("{}: unknown flag {}; '{} --help' lists the flags", where, flag, where);
}

// The first flag among `args` (after the command's name, before a "--" that hands the rest to another command)
// that `cmd` does not have.
std::optional<std::string> first_unknown_flag(const CLI::App& cmd, const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-' || looks_like_number(arg)) continue;
    // "--steps=10" names --steps; "-n5" (a short flag with its value attached) names -n.
    const std::string name = arg[1] == '-' ? arg.substr(0, arg.find('=')) : arg.substr(0, 2);
    if (cmd.get_option_no_throw(name) == nullptr) return name;
  }
  return std::nullopt;
}

// The value given to `flag` among `args` ("--bucket-mb 25MB" or "--bucket-mb=25MB").
std::optional<std::string> value_of(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind(flag + "=", 0) == 0) return args[i].substr(flag.size() + 1);
  }
  return std::nullopt;
}

// A conversion or validation error on a value with a unit: "--bucket-mb: '25MB' ...". CLI11 names the option in
// its message ("Could not convert: --bucket-mb = 25MB"; a validator's "--bucket-mb: ..."), so look for each of
// the command's flags there.
std::optional<std::string> unit_message(const CLI::App& cmd, const std::vector<std::string>& args,
                                        const std::string& what) {
  for (const std::string& flag : flag_names(cmd)) {
    if (flag.size() < 3 || what.find(flag) == std::string::npos) continue;
    const std::optional<std::string> value = value_of(args, flag);
    if (!value || !number_with_unit(*value)) continue;
    size_t digits = 0;
    while (digits < value->size() && (std::isdigit(static_cast<unsigned char>((*value)[digits])) || (*value)[digits] == '.'))
      ++digits;
    return fmt::format("ddpx {}: {} '{}': give a plain number; the unit is in the flag's name or its help "
                       "('ddpx {} --help'), e.g. {} {}",
                       cmd.get_name(), flag, *value, cmd.get_name(), flag, value->substr(0, digits));
  }
  return std::nullopt;
}

}  // namespace

const std::vector<FlagAlias>& flag_aliases() {
  // timm's train.py, as its users type it. torchvision's train.py flags are not here: `ddpx train` accepts them
  // (cli/torchvision_flags.hpp), so they never reach this explanation.
  static const std::vector<FlagAlias> aliases = {
      {"--batch_size", "--batch", "images per rank per micro-batch"},
      {"--sched", "--lr-schedule", "constant | cosine | linear | step:EVERY[:GAMMA]"},
      {"--smoothing", "--label-smoothing", "torch's cross_entropy(label_smoothing=E)"},
      {"--warmup-epochs", "--lr-warmup-epochs", "the learning-rate warm-up in epochs"},
      {"--warmup-lr", "--lr-warmup-start", "a fraction of --lr, not a rate"},
      {"--clip-grad", "--clip-grad-norm", "the global L2 norm's cap"},
  };
  return aliases;
}

std::optional<FlagAlias> flag_alias(std::string_view typed) {
  for (const FlagAlias& alias : flag_aliases())
    if (alias.typed == typed) return alias;
  return std::nullopt;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> closest_name(std::string_view typed, const std::vector<std::string>& candidates) {
  const std::string_view bare = typed.substr(std::min(typed.find_first_not_of('-'), typed.size()));
  const size_t limit = bare.size() <= 4 ? 1 : 2;
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(typed, candidate);
    if (distance < best_distance) best = candidate, best_distance = distance;
  }
  if (best) return best;
  // A word left out or put in ("--bucket-mb" for "--bucket-cap-mb"): the nearest name that has every word typed.
  const std::vector<std::string> typed_words = words(bare);
  if (typed_words.size() < 2) return std::nullopt;
  best_distance = SIZE_MAX;
  for (const std::string& candidate : candidates) {
    const std::vector<std::string> candidate_words = words(candidate);
    const bool has_all = std::all_of(typed_words.begin(), typed_words.end(), [&](const std::string& word) {
      return std::find(candidate_words.begin(), candidate_words.end(), word) != candidate_words.end();
    });
    const size_t distance = edit_distance(typed, candidate);
    if (has_all && distance < best_distance) best = candidate, best_distance = distance;
  }
  return best;
}

std::optional<std::string> explain_parse_error(const CLI::App& root, const std::vector<std::string>& args,
                                               const CLI::ParseError& error) {
  if (error.get_exit_code() == 0) return std::nullopt;  // --help, --version
  const std::vector<std::string> commands = command_names(root);
  if (!args.empty() && args[0].size() > 1 && args[0][0] == '-' && !looks_like_number(args[0])) {
    const std::string flag = args[0].substr(0, args[0].find('='));
    if (root.get_option_no_throw(flag) == nullptr)
      return fmt::format("{} is not a flag of ddpx itself; give a command first (ddpx train {} ...). Commands: {}",
                         flag, flag, joined(commands));
  }
  const auto first_word = std::find_if(args.begin(), args.end(), [](const std::string& a) { return a.empty() || a[0] != '-'; });
  if (first_word == args.end())
    return fmt::format("give a command: {}. 'ddpx --help' says what each does, 'ddpx <command> --help' its flags",
                       joined(commands));
  if (std::find(commands.begin(), commands.end(), *first_word) == commands.end()) {
    if (const auto near = closest_name(*first_word, commands))
      return fmt::format("'{}' is not a ddpx command; did you mean '{}'? Commands: {}", *first_word, *near,
                         joined(commands));
    return fmt::format("'{}' is not a ddpx command. Commands: {} ('ddpx --help' says what each does)", *first_word,
                       joined(commands));
  }
  const CLI::App& cmd = *root.get_subcommand(*first_word);
  const std::vector<std::string> rest(first_word + 1, args.end());
  if (const auto flag = first_unknown_flag(cmd, rest)) return unknown_flag_message(cmd, *flag);
  if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr ||
      dynamic_cast<const CLI::ValidationError*>(&error) != nullptr)
    return unit_message(cmd, rest, error.what());
  return std::nullopt;
}

}  // namespace ddpx::cli
