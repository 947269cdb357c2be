// What every file-reader fuzz target shares: a private scratch folder for the file a path-taking reader opens,
// and the rule that a reader refuses bad input only with ddpx::Error.
// Guarantees: the scratch folder is created once per process in /dev/shm (else $TMPDIR or /tmp) and removed at
// a normal exit (a crashing run leaves its few kB there); an exception other than ddpx::Error (or a refusal type
// the target catches itself) ends the process with abort() after printing its type and message, so libFuzzer
// keeps the input as a crash. Hangs and unbounded memory are caught by libFuzzer itself (-timeout, -rss_limit_mb,
// -malloc_limit_mb), as are the sanitizers' findings (ASan, UBSan, LeakSanitizer).
#pragma once
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <typeinfo>

#include "core/error.hpp"

namespace ddpx::fuzz {

// The model the layout-aware targets (parameter files, checkpoints) load into: tiny, so that its files, and so
// the corpus, stay a few kB, yet it has every kind of tensor a ViT has.
inline constexpr std::string_view kModelSpec =
    "custom:image=4,patch=2,channels=1,layers=1,hidden=4,heads=1,mlp=4,classes=2";

inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    // In memory when /dev/shm is there: on a busy disk an open() in /tmp once took longer than -timeout.
    std::error_code error;
    const std::filesystem::path parent =
        std::filesystem::is_directory("/dev/shm", error) && ::access("/dev/shm", W_OK) == 0
            ? std::filesystem::path("/dev/shm")
            : std::filesystem::temp_directory_path();
    std::string pattern = (parent / "ddpx-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("ddpx fuzz: mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return std::filesystem::path(pattern);
  }();
  return dir;
}

// Writes the input as scratch_dir()/name (replacing the previous one) and returns its path.
inline std::filesystem::path write_scratch_file(std::string_view name, const uint8_t* data, size_t size) {
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "ddpx fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void abort_on(const std::exception& e, const char* what) {
  std::fprintf(stderr, "ddpx fuzz: the reader let %s escape instead of a ddpx::Error: %s: %s\n", what,
               typeid(e).name(), e.what());
  std::abort();
}

// Runs read(): returning or throwing ddpx::Error is fine; any other exception aborts. (A target whose reader has
// another documented refusal type catches that one inside read.)
template <typename Read>
void expect_clean_refusal(Read&& read) {
  try {
    read();
  } catch (const Error&) {
  } catch (const std::bad_alloc& e) {
    abort_on(e, "an allocation failure (memory not bounded by the input)");
  } catch (const std::exception& e) {
    abort_on(e, "an exception");
  } catch (...) {
    std::fprintf(stderr, "ddpx fuzz: the reader threw something that is not a std::exception\n");
    std::abort();
  }
}

}  // namespace ddpx::fuzz
