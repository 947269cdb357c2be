// Integer flags read in base 10, everywhere. CLI11 2.1 converts integers with strtoll(text, base 0), so
// `--steps 010` trained 8 steps, `--seed 09` was "Could not convert" and hex slipped past checks that expected
// decimal. read_integers_in_decimal(app) gives every integer option of `app` and its subcommands (CLI11's type name
// INT or UINT) a transform that runs after the option's own checks, on the command line and on --config files
// alike (both go through the option's validators).
// Guarantees: an integer flag's value is an optional '-' (INT only) or '+', then decimal digits, nothing else
// ("0x10", "1e3", " 5", "--5" are refused naming the flag and the value); leading zeros are dropped before CLI11
// converts it, so "010" is 10 and "09" is 9; a value outside 64 bits is refused, not clamped.
#pragma once
#include <CLI/CLI.hpp>

#include <string>

namespace ddpx::cli {

// "" and `text` rewritten without leading zeros when it is a decimal integer, else the reason.
std::string normalize_decimal_integer(std::string& text, bool allow_negative);

// "" when `text` is a decimal floating-point value, else the reason: an empty value (CLI11 took it as the default)
// and hexadecimal ("0x10" was 16, "0x1p3" 8) are refused, as integer flags refuse them (issue 48 item 9).
std::string decimal_number_problem(const std::string& text);

// Also gives every floating-point option (type name FLOAT) decimal_number_problem() as a transform.
void read_integers_in_decimal(CLI::App& app);

}  // namespace ddpx::cli
