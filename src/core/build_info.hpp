// What this ddpx binary is: the project version (CMake's project(VERSION)) and the git commit it was built from.
// Guarantee: the commit is the source tree's at the last build ("<short hash>", with "-dirty" when tracked files
// had changes), or "unknown" when the tree was not a git checkout; it is regenerated on every build, never stale by
// a commit, and only build_info.cpp depends on it (a new commit does not rebuild the project).
#pragma once
#include <string>

namespace ddpx {

std::string ddpx_version();  // "0.1"
std::string ddpx_commit();   // "e933e79", "e933e79-dirty" or "unknown"

}  // namespace ddpx
