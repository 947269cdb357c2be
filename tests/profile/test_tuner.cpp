// Tuner: picks the fastest candidate from a fake trial runner, measures each configuration once, reports the
// speedup over the default, and writes a config file that reads back.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "core/error.hpp"
#include "profile/tuner.hpp"

namespace ddpx {
namespace {

TEST(Tuner, PicksTheClearlyFasterConfiguration) {
  const TrialConfig default_config{25, 1, "allreduce"};
  const std::vector<TrialConfig> candidates =
      candidate_grid({25, 100}, {1}, {"allreduce", "bf16", "powersgd:4"});  // includes the default
  ASSERT_EQ(candidates.size(), 6u);
  std::vector<TrialConfig> measured;
  const TuneResult result = tune(default_config, candidates, [&](const TrialConfig& c) {
    measured.push_back(c);
    if (c.bucket_mb == 100 && c.comm_hook == "bf16") return 15.0;
    return c == default_config ? 10.0 : 11.0;
  });
  EXPECT_EQ(measured.size(), 6u);  // the default once, five other candidates
  EXPECT_EQ(measured.front(), default_config);
  EXPECT_EQ(result.trials.size(), 6u);
  EXPECT_EQ(result.best.config, (TrialConfig{100, 1, "bf16"}));
  EXPECT_DOUBLE_EQ(result.best.steps_per_s, 15.0);
  EXPECT_DOUBLE_EQ(result.baseline.steps_per_s, 10.0);
  EXPECT_DOUBLE_EQ(result.speedup, 1.5);
  const std::string summary = result.summary();
  EXPECT_NE(summary.find("--bucket-mb 100 --first-bucket-mb 1 --comm-hook bf16  <- fastest"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("1.50x the default"), std::string::npos) << summary;
}

TEST(Tuner, DefaultWinsTiesAndIsAlwaysMeasured) {
  const TuneResult result = tune(TrialConfig{}, {TrialConfig{50, 1, "bf16"}}, [](const TrialConfig&) { return 8.0; });
  EXPECT_EQ(result.best.config, TrialConfig{});
  EXPECT_DOUBLE_EQ(result.speedup, 1.0);
}

TEST(Tuner, BadTrialsNameTheirFlags) {
  try {
    tune(TrialConfig{}, {TrialConfig{5, 1, "fp16"}},
         [](const TrialConfig& c) { return c.comm_hook == "fp16" ? 0.0 : 1.0; });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--bucket-mb 5 --first-bucket-mb 1 --comm-hook fp16"), std::string::npos)
        << e.what();
  }
  try {
    tune(TrialConfig{}, {}, [](const TrialConfig&) -> double { throw Error("out of memory"); });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(candidate_grid({0}, {1}, {"allreduce"}), Error);
}

TEST(Tuner, ConfigFilesRoundTripInBothForms) {
  const TrialConfig config{100, 2.5, "powersgd:4"};
  EXPECT_EQ(trial_config_text(config),
            "# ddpx train settings chosen by `ddpx tune`\nbucket-mb = 100\nfirst-bucket-mb = 2.5\n"
            "comm-hook = \"powersgd:4\"\n");
  const std::string dir = ::testing::TempDir();
  for (const std::string name : {"ddpx_tuned.ini", "ddpx_tuned.json"}) {
    write_trial_config(config, dir + name);
    EXPECT_EQ(read_trial_config(dir + name), config) << name;
    std::remove((dir + name).c_str());
  }
  {
    std::ofstream out(dir + "ddpx_bad.ini");
    out << "bucket-mb = 25\nbucket_cap = 3\n";
  }
  try {
    read_trial_config(dir + "ddpx_bad.ini");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2: unknown key 'bucket_cap'"), std::string::npos) << e.what();
  }
  std::remove((dir + "ddpx_bad.ini").c_str());
}

}  // namespace
}  // namespace ddpx
