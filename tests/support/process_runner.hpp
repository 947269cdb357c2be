// Running a command from a test: its exit status and what it printed. Guarantees: run_command() runs `command`
// through /bin/sh (popen), reads its stdout to the end (append 2>&1 for stderr too; bound the run with `timeout N`
// in the command where it could hang) and returns the exit code, or 128 + the signal that ended it, or -1 when it
// could not be started.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace ddpx::testing {

struct CommandResult {
  int status = -1;
  std::string output;
};

inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 512> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe)) result.output += buffer.data();
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return result;
}

}  // namespace ddpx::testing
