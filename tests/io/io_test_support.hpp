// Helpers for the io tests: a private temporary directory per test, raw file writing, and error-message checks.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "error_expect.hpp"
#include "support/scratch_dir.hpp"

namespace ddpx::testing {

// A fresh directory under the system temp dir, removed with everything in it at the end of the test.
using TempDir = ScratchDir;

inline void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace ddpx::testing
