// Child-process environment and lifetime helpers (see child_environment.hpp).
#include "launch/child_environment.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>

extern char** environ;

namespace ddpx {
namespace {
std::string_view name_of(std::string_view assignment) { return assignment.substr(0, assignment.find('=')); }
}  // namespace

std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view variable(*entry);
    const bool replaced = std::any_of(overrides.begin(), overrides.end(),
                                      [&](const std::string& o) { return name_of(o) == name_of(variable); });
    if (!replaced) env.emplace_back(variable);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

std::vector<std::string> environment_without(std::initializer_list<std::string_view> names) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view variable(*entry);
    if (std::find(names.begin(), names.end(), name_of(variable)) == names.end()) env.emplace_back(variable);
  }
  return env;
}

void die_with_parent(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(1);
}

}  // namespace ddpx
