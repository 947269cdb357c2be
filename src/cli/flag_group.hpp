// FlagGroup: the flags of one `--help` section of a command. option() and flag() add a flag to the command in this
// section, so a command's flags read as one list of rows per section (flag, variable, help) instead of each
// repeating its ->group(...). Returns CLI11's option, for checks and type names.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <utility>

namespace ddpx::cli {

class FlagGroup {
 public:
  FlagGroup(CLI::App* cmd, std::string name) : cmd_(cmd), name_(std::move(name)) {}
  template <typename T>
  CLI::Option* option(const std::string& flag, T& variable, const std::string& help) const {
    return cmd_->add_option(flag, variable, help)->group(name_);
  }
  CLI::Option* flag(const std::string& flag, bool& variable, const std::string& help) const {
    return cmd_->add_flag(flag, variable, help)->group(name_);
  }
  const std::string& name() const { return name_; }

 private:
  CLI::App* cmd_;
  std::string name_;
};

}  // namespace ddpx::cli
