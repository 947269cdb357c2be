// Running the ddpx executable from tests: the command line, its exit status and everything it printed.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/process_runner.hpp"
#include "support/scratch_dir.hpp"

namespace ddpx::testing {

using CliResult = CommandResult;  // output: stdout and stderr

// `ddpx <args>` through the shell (args are quoted by the caller where needed), in this environment minus every
// launcher's rank variables (a CI runner inside a Slurm job or a stray RANK must not turn the tested command into
// a worker), plus `env` ("NAME=value ..."), which a test sets to play a launcher.
inline CliResult run_ddpx(const std::string& args, const std::string& env = "") {
  // mpirun as root (CI containers) needs these; scripts/test.sh sets them too.
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  std::string command = "env";
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                           "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                           "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"})
    command += std::string(" -u ") + name;
  command += " " + env + " " + std::string(DDPX_BINARY) + " " + args + " 2>&1";
  return run_command(command);
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::filesystem::path fresh_dir(const std::string& name) { return fresh_dir("cli", name); }

inline std::string recorded(const std::string& file) {
  return std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/recorded/" + file;
}

}  // namespace ddpx::testing
