// fake_env: an EnvLookup over a fixed map of variables, so the launcher-detection tests describe an environment
// (torchrun's, Open MPI's, Slurm's) without touching the process's own.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "dist/bootstrap.hpp"

namespace ddpx::testing {

inline EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace ddpx::testing
