// What a newcomer's commonest command-line slips get instead of CLI11's raw message: a mistyped command or flag
// ("did you mean train", "did you mean --steps"), a missing command (the list of commands), and a value with a
// unit the flag's name already states (--bucket-mb 25MB).
// Guarantees: explain_parse_error() returns a message only when it can name the slip exactly (the flag or command
// as typed, and a fix); otherwise nullopt, and CLI11's own message stands. Suggestions come from the registered
// commands and flags themselves (never a second list), by edit distance with a swap of two neighbouring letters
// counting as one edit, and are offered only when close (at most 2 edits, 1 for names of up to 4 letters).
// Before that, the names timm's training script uses (--sched, --smoothing, --clip-grad, ...) are looked up in one
// table of aliases and answered with the ddpx spelling (flag_aliases(); offered only for a command that has the
// ddpx flag); torchvision's train.py flags are accepted by `ddpx train` itself (cli/torchvision_flags.hpp). Nothing
// here parses or runs a command.
#pragma once
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx::cli {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours cost 1.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `typed` if it is close enough to be a slip (see the header); ties go to the first.
std::optional<std::string> closest_name(std::string_view typed, const std::vector<std::string>& candidates);

// Another framework's spelling of a ddpx flag: `typed` as timm users type it, `ddpx` what to type
// instead (a flag, with a value where the meaning needs one: "--precision bf16"), `note` what differs.
struct FlagAlias {
  std::string_view typed, ddpx, note;
};
const std::vector<FlagAlias>& flag_aliases();
// The alias entry for `typed` ("--batch-size"), if the table has one.
std::optional<FlagAlias> flag_alias(std::string_view typed);

// `args` is argv[1..]. Called with the ParseError CLI11 threw for them; see the header for what it explains.
std::optional<std::string> explain_parse_error(const CLI::App& root, const std::vector<std::string>& args,
                                               const CLI::ParseError& error);

}  // namespace ddpx::cli
