// Paths of the recorded inputs under tests/profile/data (see data/README.md).
#pragma once
#include <string>

namespace ddpx::testing {

inline std::string profile_data(const std::string& name) {
  return std::string(DDPX_SOURCE_DIR) + "/tests/profile/data/" + name;
}

}  // namespace ddpx::testing
