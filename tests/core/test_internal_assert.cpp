// DDPX_INTERNAL_ASSERT and DDPX_INTERNAL_FAIL (core/internal_assert.hpp): a broken invariant is an InternalError,
// never a ddpx::Error (so no user-error handler swallows it), and its message names the place, the condition and
// the detail, and asks for a report. The exit status it leads to is checked on the real executable in
// tests/cli/test_exit_status.cpp.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/exit_status.hpp"
#include "core/internal_assert.hpp"

namespace ddpx {
namespace {

std::string internal_message_of(void (*call)()) {
  try {
    call();
  } catch (const Error&) {
    ADD_FAILURE() << "an internal assert threw a user error (ddpx::Error)";
  } catch (const InternalError& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(InternalAssert, HoldingInvariantDoesNothing) {
  int evaluated = 0;
  DDPX_INTERNAL_ASSERT(++evaluated == 1, "never formatted");
  EXPECT_EQ(evaluated, 1);  // the condition is evaluated exactly once
}

TEST(InternalAssert, BrokenInvariantNamesPlaceConditionAndDetailAndAsksForAReport) {
  const std::string message = internal_message_of([] {
    const int span_end = 7;
    DDPX_INTERNAL_ASSERT(span_end % 4 == 0, "span end {} is not 4-aligned", span_end);
  });
  EXPECT_EQ(message.rfind("internal error at ", 0), 0u) << message;
  EXPECT_NE(message.find("tests/core/test_internal_assert.cpp:"), std::string::npos) << message;
  EXPECT_NE(message.find("(span_end % 4 == 0 is false)"), std::string::npos) << message;
  EXPECT_NE(message.find(": span end 7 is not 4-aligned."), std::string::npos) << message;
  EXPECT_NE(message.find("This is a bug in ddpx"), std::string::npos) << message;
  EXPECT_NE(message.find("please report it"), std::string::npos) << message;
}

TEST(InternalAssert, UnreachableBranchHasNoCondition) {
  const std::string message = internal_message_of([] { DDPX_INTERNAL_FAIL("no route for rank {}", 3); });
  EXPECT_NE(message.find("test_internal_assert.cpp:"), std::string::npos) << message;
  EXPECT_NE(message.find(": no route for rank 3."), std::string::npos) << message;
  EXPECT_EQ(message.find("is false"), std::string::npos) << message;
}

TEST(InternalAssert, IsNotCaughtAsAUserError) {
  bool caught_as_user_error = false, caught_as_internal = false;
  try {
    try {
      DDPX_INTERNAL_FAIL("invariant");
    } catch (const Error&) {
      caught_as_user_error = true;
    }
  } catch (const InternalError&) {
    caught_as_internal = true;
  }
  EXPECT_FALSE(caught_as_user_error);
  EXPECT_TRUE(caught_as_internal);
}

TEST(InternalAssert, PathIsShownFromSrc) {
  EXPECT_STREQ(detail::path_from_src("/work/x/src/train/cpu_engine.cpp"), "src/train/cpu_engine.cpp");
  EXPECT_STREQ(detail::path_from_src("/home/src/ddpx/src/io/npy.cpp"), "src/io/npy.cpp");
  EXPECT_STREQ(detail::path_from_src("/work/mysrc/a.cpp"), "/work/mysrc/a.cpp");  // no src/ folder: unchanged
  EXPECT_STREQ(detail::path_from_src("src/core/error.hpp"), "src/core/error.hpp");
}

TEST(ExitStatus, EveryOutcomeHasItsOwnStatus) {
  const int statuses[] = {exit_status::success, exit_status::launcher_lost, exit_status::user_error,
                          exit_status::comm_timeout, exit_status::internal_error};
  for (size_t i = 0; i < std::size(statuses); ++i)
    for (size_t j = i + 1; j < std::size(statuses); ++j) EXPECT_NE(statuses[i], statuses[j]) << i << " " << j;
  EXPECT_EQ(exit_status::user_error, 2);      // scripts and docs rely on these two values
  EXPECT_EQ(exit_status::internal_error, 4);
}

}  // namespace
}  // namespace ddpx
