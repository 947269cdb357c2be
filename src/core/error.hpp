// ddpx::Error and the checks that raise it.
// Guarantee: every failure a user can cause (bad flag, bad file, bad shape, disagreeing ranks) surfaces as a
// ddpx::Error whose message names the offending flag/file/rank/value and says what to do. The CLI catches it,
// prints "ddpx: error: <message>" and exits with status 2; nothing in the library calls exit() or abort().
// Invariants of ddpx's own code are not user errors: DDPX_INTERNAL_ASSERT (core/internal_assert.hpp), status 4.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ddpx {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws ddpx::Error with a formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace ddpx

// Requires `cond`; otherwise throws ddpx::Error with the formatted message.
#define DDPX_REQUIRE(cond, ...)          \
  do {                                   \
    if (!(cond)) ::ddpx::fail(__VA_ARGS__); \
  } while (0)
