// Output folders for bench and tune (see output_dir.hpp).
#include "cli/output_dir.hpp"

#include <system_error>

#include "core/error.hpp"

namespace ddpx::cli {

void create_output_dir(const std::filesystem::path& dir, std::string_view flag) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  DDPX_REQUIRE(!error && std::filesystem::is_directory(dir), "{} {}: cannot create that folder ({}); choose a "
               "writable path", flag, dir.string(), error ? error.message() : "a file of that name is in the way");
}

}  // namespace ddpx::cli
