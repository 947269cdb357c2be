// Helpers for tests of error paths. error_of() returns the message of the ddpx::Error a call throws, or kNoError
// when it returns normally; expect_error() fails the test unless the call throws a ddpx::Error whose message
// contains every needle. Any other exception propagates and fails the test with its own message.
#pragma once
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace ddpx::testing {

inline constexpr std::string_view kNoError = "(no error)";

template <typename F>
std::string error_of(F&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return std::string(kNoError);
}

template <typename F>
void expect_error(F&& call, std::initializer_list<std::string_view> needles) {
  const std::string message = error_of(call);
  if (message == kNoError) {
    ADD_FAILURE() << "expected a ddpx::Error";
    return;
  }
  for (std::string_view needle : needles)
    EXPECT_NE(message.find(needle), std::string::npos) << "missing '" << needle << "' in: " << message;
}

}  // namespace ddpx::testing
