// predicted_hook: ddpx predict reads hooks as train spells them (through the hook catalogue) and tells them apart
// by what crosses the wire, so a report's canonical powersgd:R:S is the row powersgd:R; errors name the flag.
#include <gtest/gtest.h>

#include "error_expect.hpp"
#include "predict/measured_step.hpp"

namespace ddpx::predict {
namespace {

TEST(PredictedHook, HookNamesParseAsTrainSpellsThem) {
  EXPECT_EQ(predicted_hook("powersgd:4", "--hooks"), (CommHookSpec{"powersgd", {4}}));
  EXPECT_EQ(predicted_hook("bf16", "--hooks").text(), "bf16");
  // Run reports record PowerSGD's start too (powersgd:R:S, comm_plan/hook_catalogue.hpp); the model drops it.
  EXPECT_EQ(predicted_hook("powersgd:4:2", "config.hook"), (CommHookSpec{"powersgd", {4}}));
  EXPECT_EQ(predicted_hook("powersgd:4:2", "config.hook").text(), "powersgd:4");
  for (const char* bad : {"powersgd", "powersgd:0", "powersgd:x", "powersgd:4:", "powersgd:4:x", "powersgd:4:-1",
                          "powersgd:1025", "bf8", ""})
    testing::expect_error([&] { (void)predicted_hook(bad, "--hooks"); }, {"--hooks"});
}

}  // namespace
}  // namespace ddpx::predict
