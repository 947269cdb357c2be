// Config files for subcommands: `ddpx train --config FILE` (the file `ddpx tune` writes).
// Why: CLI11 2.1 (Debian 12) reads a --config file only for the top-level app, so a subcommand's set_config()
// option is accepted and silently ignored. read_config_for(cmd) makes the subcommand read it itself.
// Guarantees: after `cmd` has parsed its command line, every key = value of the file(s) (CLI11's TOML/INI
// reader; keys are the long flag names without dashes, optionally under a [<subcommand>] section; a file ending
// in .json is a flat object of the same keys, as `ddpx tune --out best.json` writes) is applied to
// the option of that name unless the command line gave it (the command line always wins, whatever the order).
// A UTF-8 byte-order mark at the start of the file is skipped. The file is read without blocking and must be a regular
// file of at most 1 MiB (a FIFO, /dev/urandom or a huge log is refused at once). An unknown key or section, a key set
// twice in one file (.cfg and .json alike), several values for a one-value flag, or a file that cannot be read, is a
// CLI::ConfigError naming the file and the key (ddpx prints it and exits 2). With a CLI11 that reads subcommand config
// files itself, the options it filled count as given and are not applied twice.
// skip_key(key) true: the key was read already by the caller (`ddpx train`'s torchvision keys, which
// cli/torchvision_flags.hpp translates before the parse) and is left alone here.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace ddpx::cli {

void read_config_for(CLI::App& cmd, std::function<bool(const std::string&)> skip_key = {});
// One config file's items (.cfg through `formatter`, .json as above); the errors are read_config_for's.
std::vector<CLI::ConfigItem> read_config_items(const std::string& file, const CLI::Config& formatter);

}  // namespace ddpx::cli
