// DDPX_INTERNAL_ASSERT: checks of ddpx's own invariants, split from the checks of user input (DDPX_REQUIRE in
// core/error.hpp), as PyTorch splits TORCH_INTERNAL_ASSERT from TORCH_CHECK.
// Guarantees:
//  - A failed assert throws ddpx::InternalError, which is NOT a ddpx::Error: no code that handles a user's error
//    (a checkpoint that cannot be written, a bad config line) catches it by accident and carries on.
//  - Its message says "internal error", names file:line (from src/) and the condition, adds the formatted detail,
//    and asks for a report; the CLI prints it as "ddpx: internal error at ..." and exits with
//    exit_status::internal_error (4), never with the user-error status 2 (core/exit_status.hpp).
//  - Like DDPX_REQUIRE it throws and never exits: the process unwinds (NCCL is aborted, files are not left
//    half-written) exactly as for any other error.
// Use it for what no input can cause (a span the code computed itself, a state the code just set); anything a
// flag, file, environment or peer rank can cause is a DDPX_REQUIRE with a message that says what to change.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ddpx {

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

namespace detail {

// "src/train/cpu_engine.cpp" rather than the build machine's absolute path.
inline const char* path_from_src(const char* file) {
  const char* shown = file;
  for (const char* at = file; *at != '\0'; ++at)
    if (at[0] == 's' && at[1] == 'r' && at[2] == 'c' && at[3] == '/' && (at == file || at[-1] == '/')) shown = at;
  return shown;
}

// condition: the failed expression, or nullptr for a branch that must never run (DDPX_INTERNAL_FAIL).
inline std::string internal_error_message(const char* file, int line, const char* condition,
                                          const std::string& detail) {
  const std::string what = condition ? fmt::format(" ({} is false)", condition) : std::string();
  return fmt::format("internal error at {}:{}{}: {}. This is a bug in ddpx, not in how it was run: please report "
                     "it with the command line and this message", path_from_src(file), line, what, detail);
}

template <typename... Args>
[[noreturn]] void internal_fail(const char* file, int line, const char* condition,
                                fmt::format_string<Args...> format, Args&&... args) {
  throw InternalError(
      internal_error_message(file, line, condition, fmt::format(format, std::forward<Args>(args)...)));
}

}  // namespace detail
}  // namespace ddpx

// Asserts an invariant of ddpx's own code; otherwise throws ddpx::InternalError with the formatted detail.
#define DDPX_INTERNAL_ASSERT(cond, ...)                                                  \
  do {                                                                                   \
    if (!(cond)) ::ddpx::detail::internal_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)
// A branch of ddpx's own code that must never run (an exhausted switch, a route that was checked before).
#define DDPX_INTERNAL_FAIL(...) ::ddpx::detail::internal_fail(__FILE__, __LINE__, nullptr, __VA_ARGS__)
