// Decimal-only integer flags (see decimal_flags.hpp).
#include "cli/decimal_flags.hpp"

#include <string_view>

#include "cli/arg_lists.hpp"

namespace ddpx::cli {

std::string normalize_decimal_integer(std::string& text, bool allow_negative) {
  std::string_view digits = text;
  std::string sign;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    if (digits[0] == '-') sign = "-";
    digits.remove_prefix(1);
  }
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return "'" + text + "' is not a decimal integer (ddpx reads integers in base 10 only: digits, with a leading '-' "
           "where negative values are allowed)";
  const size_t first = digits.find_first_not_of('0');
  std::string normalized = first == std::string_view::npos ? "0" : sign + std::string(digits.substr(first));
  if (std::string problem = whole_number_problem(normalized, allow_negative); !problem.empty()) return problem;
  text = std::move(normalized);
  return "";
}

void read_integers_in_decimal(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    const bool is_unsigned = type == "UINT" || type.starts_with("UINT:");
    const bool is_signed = type == "INT" || type.starts_with("INT:");
    if (!is_unsigned && !is_signed) continue;
    option->transform(CLI::Validator(
        [is_signed](std::string& text) { return normalize_decimal_integer(text, is_signed); }, ""));
  }
  for (CLI::App* subcommand : app.get_subcommands([](CLI::App*) { return true; }))
    read_integers_in_decimal(*subcommand);
}

}  // namespace ddpx::cli
