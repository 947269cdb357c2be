// Creating the folder a command writes into, before any work starts. Guarantee: failure (a file in the way, no
// permission) is a ddpx::Error naming the flag, the path and the reason, never a bare filesystem exception.
#pragma once
#include <filesystem>
#include <string_view>

namespace ddpx::cli {

void create_output_dir(const std::filesystem::path& dir, std::string_view flag);

}  // namespace ddpx::cli
