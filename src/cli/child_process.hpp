// Running one helper program to completion (a `ddpx train` trial, the PyTorch anchor) with its output in a file.
// Guarantees: the child gets this process's environment plus `env` (NAME=value entries, overriding variables of
// the same name), its stdout and stderr both go to log_path (created or truncated), and run_child_process()
// returns only after the child has exited: its exit status, or 128 + signal number when a signal ended it, or 127
// when the program could not be started (the log then says why). The program is looked up in PATH unless it
// contains a '/'. Not thread-safe (fork); the caller keeps at most one child running.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ddpx::cli {

int run_child_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      const std::string& log_path);

// This program's own path (/proc/self/exe), for re-running `ddpx` subcommands.
std::string this_executable();

// A helper script a command runs (the PyTorch anchor, the torchvision loader bench): `given`, the flag's value (an
// error naming `flag` when there is no such file), else `relative` (e.g. "bench/pt_vit_anchor.py") under the
// current directory or under a folder above this executable (a build folder inside the repository); "" when it is
// found nowhere.
std::string find_helper_script(const std::string& given, std::string_view flag, const std::string& relative);

// The last `lines` lines of a text file ("" when it cannot be read), for error messages.
std::string file_tail(const std::string& path, int lines);

}  // namespace ddpx::cli
