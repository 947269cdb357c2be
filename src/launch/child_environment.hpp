// What a forked child needs from its parent, shared by the launcher (workers, mpirun) and the CLI's trial runs:
//  - environment_with(): this process's environment with NAME=value overrides replacing same-named variables;
//  - environment_without(): this process's environment minus the named variables;
//  - die_with_parent(): called in the child between fork and exec, ties its life to the parent's: the kernel
//    sends it SIGTERM when the parent dies (killed, OOM-killed, ended by SIGPIPE from `| head`), and a child
//    whose parent already died exits at once. Async-signal-safe. Must be called in a child forked by the
//    parent's main thread (the death signal follows the forking thread, not the process).
#pragma once
#include <sys/types.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

std::vector<std::string> environment_with(const std::vector<std::string>& overrides);
std::vector<std::string> environment_without(std::initializer_list<std::string_view> names);
void die_with_parent(pid_t parent);

}  // namespace ddpx
