// Child processes with their output in a log file (see child_process.hpp).
#include "cli/child_process.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "launch/child_environment.hpp"

namespace ddpx::cli {

int run_child_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      const std::string& log_path) {
  DDPX_INTERNAL_ASSERT(!argv.empty(), "run_child_process without a program");
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  const std::vector<std::string> environment = environment_with(env);
  std::vector<char*> argv_c, env_c;
  for (const std::string& a : argv) argv_c.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : environment) env_c.push_back(const_cast<char*>(e.c_str()));
  argv_c.push_back(nullptr);
  env_c.push_back(nullptr);

  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  DDPX_REQUIRE(log >= 0, "cannot write the log file '{}': {}", log_path, std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(log);
    fail("cannot start '{}': fork failed: {}", argv[0], std::strerror(error));
  }
  if (pid == 0) {
    die_with_parent(parent);  // a killed `ddpx bench` must not leave its trial running
    ::dup2(log, 1);
    ::dup2(log, 2);
    ::execvpe(argv_c[0], argv_c.data(), env_c.data());
    const char message[] = "ddpx: could not execute the program (not found or not executable)\n";
    (void)!::write(2, message, sizeof message - 1);
    ::_exit(127);
  }
  ::close(log);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    DDPX_REQUIRE(errno == EINTR, "waiting for '{}' failed: {}", argv[0], std::strerror(errno));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::string this_executable() {
  std::string path(4096, '\0');
  const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  DDPX_REQUIRE(length > 0, "cannot find this program's path (/proc/self/exe): {}", std::strerror(errno));
  path.resize(static_cast<size_t>(length));
  return path;
}

std::string find_helper_script(const std::string& given, std::string_view flag, const std::string& relative) {
  namespace fs = std::filesystem;
  if (!given.empty()) {
    DDPX_REQUIRE(fs::exists(given), "{} {}: no such file", flag, given);
    return given;
  }
  if (fs::exists(relative)) return fs::absolute(relative).string();
  for (fs::path dir = fs::path(this_executable()).parent_path(); !dir.empty() && dir != dir.root_path();
       dir = dir.parent_path())
    if (fs::exists(dir / relative)) return (dir / relative).string();
  return "";
}

std::string file_tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::vector<std::string> kept;
  for (std::string line; std::getline(in, line);) {
    kept.push_back(line);
    if (static_cast<int>(kept.size()) > lines) kept.erase(kept.begin());
  }
  std::string out;
  for (const std::string& line : kept) out += line + "\n";
  return out;
}

}  // namespace ddpx::cli
