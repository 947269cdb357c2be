// --profile-steps parsing, the capture window's start/stop calls, and NVTX ranges (no-ops without CUDA).
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "train/nvtx.hpp"
#include "train/profile_window.hpp"

namespace ddpx {
namespace {

TEST(ProfileWindow, ParsesStepRanges) {
  EXPECT_EQ(parse_profile_steps("10:12"), (StepRange{10, 12}));
  EXPECT_EQ(parse_profile_steps("7"), (StepRange{7, 7}));
  EXPECT_EQ(parse_profile_steps("0:0"), (StepRange{0, 0}));
  for (const char* bad : {"12:10", "a:b", "", "-1:3", "3:", ":4", "1:2:3", "10 :12"}) {
    try {
      parse_profile_steps(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--profile-steps"), std::string::npos) << e.what();
    }
  }
}

struct Calls {
  std::vector<std::string> log;
  ProfileWindow::Action start() {
    return [this] { log.push_back("start"); };
  }
  ProfileWindow::Action stop() {
    return [this] { log.push_back("stop"); };
  }
};

TEST(ProfileWindow, StartsAtAAndStopsAfterB) {
  Calls calls;
  ProfileWindow window(StepRange{10, 12}, calls.start(), calls.stop());
  for (int64_t step = 0; step < 20; ++step) {
    window.on_step_begin(step);
    if (step == 10) EXPECT_EQ(calls.log, std::vector<std::string>{"start"});
    if (step == 11) EXPECT_TRUE(window.active());
    window.on_step_end(step);
    if (step == 12) EXPECT_EQ(calls.log, (std::vector<std::string>{"start", "stop"}));
  }
  window.finish();
  EXPECT_EQ(calls.log, (std::vector<std::string>{"start", "stop"}));
  EXPECT_FALSE(window.active());
}

TEST(ProfileWindow, StartsLateAndStopsOnFinishWhenBNeverComes) {
  Calls calls;
  {
    ProfileWindow window(StepRange{10, 12}, calls.start(), calls.stop());
    window.on_step_begin(11);  // resumed past A: still inside the window
    window.on_step_end(11);
    EXPECT_EQ(calls.log, std::vector<std::string>{"start"});
  }  // destructor stops the open capture
  EXPECT_EQ(calls.log, (std::vector<std::string>{"start", "stop"}));

  Calls never;
  ProfileWindow window(StepRange{10, 12}, never.start(), never.stop());
  window.on_step_begin(13);  // past the window: nothing to capture
  window.finish();
  EXPECT_TRUE(never.log.empty());
}

TEST(ProfileWindow, NoWindowAndNvtxRangesAreHarmless) {
  ProfileWindow none;
  none.on_step_begin(10);
  none.on_step_end(12);
  EXPECT_FALSE(none.active());
  { NvtxRange range("Batch 10"); NvtxRange inner(std::string("forward")); }
  SUCCEED() << (nvtx_enabled() ? "NVTX ranges emitted" : "NVTX disabled in this build");
}

}  // namespace
}  // namespace ddpx
