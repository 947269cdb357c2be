// Scratch folders for tests. Guarantees:
//  - fresh_dir(area, name): an empty folder, ddpx_test_<area>_<name>_<pid> under the system's temporary folder
//    (what was there from an earlier run of this process id is removed first); two test processes never share one
//    (ctest runs tests in parallel), and it is left behind for inspection.
//  - ScratchDir: a new folder (mkdtemp) removed with all it holds when the object goes.
#pragma once
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace ddpx::testing {

inline std::filesystem::path fresh_dir(std::string_view area, std::string_view name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ddpx_test_" + std::string(area) + "_" + std::string(name) + "_" +
                                     std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

class ScratchDir {
 public:
  explicit ScratchDir(std::string_view prefix = "ddpx-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace ddpx::testing
