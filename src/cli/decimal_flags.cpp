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

std::string decimal_number_problem(const std::string& text) {
  if (text.empty()) return "an empty value is not a number (it would silently mean the default); give a number";
  if (text.find_first_of("xXpP") != std::string::npos)
    return "'" + text + "' is not a decimal number (ddpx reads numbers in base 10 only: 0.5, 1e-3; no hexadecimal)";
  return "";
}

void read_integers_in_decimal(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type == "FLOAT" || type.starts_with("FLOAT:")) {
      option->transform(CLI::Validator([](std::string& text) { return decimal_number_problem(text); }, ""));
      continue;
    }
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
