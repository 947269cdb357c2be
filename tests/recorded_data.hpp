// Paths of the recorded inputs under tests/fixtures/recorded (see data/README.md).
#pragma once
#include <string>

namespace ddpx::testing {

inline std::string recorded_data(const std::string& name) {
  return std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/recorded/" + name;
}

}  // namespace ddpx::testing
