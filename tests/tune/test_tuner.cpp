// Tuner: picks the fastest candidate from a fake trial runner, measures each configuration once, reports the
// speedup over the default, and writes a config file that reads back.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tune/tuner.hpp"

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
  }, TuneOptions{.repeats = 1});
  EXPECT_EQ(measured.size(), 6u);  // the default once, five other candidates
  EXPECT_EQ(measured.front(), default_config);
  EXPECT_EQ(result.trials.size(), 6u);
  EXPECT_EQ(result.best.config, (TrialConfig{100, 1, "bf16"}));
  EXPECT_DOUBLE_EQ(result.best.steps_per_s, 15.0);
  EXPECT_DOUBLE_EQ(result.baseline.steps_per_s, 10.0);
  EXPECT_DOUBLE_EQ(result.speedup, 1.5);
  const std::string summary = result.summary();
  EXPECT_NE(summary.find("--bucket-mb 100 --first-bucket-mb 1 --comm-hook bf16  <- fastest beyond the spread"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("1.50x the default"), std::string::npos) << summary;
}

TEST(Tuner, DefaultWinsTiesAndIsAlwaysMeasured) {
  const TuneResult result = tune(TrialConfig{}, {TrialConfig{50, 1, "bf16"}}, [](const TrialConfig&) { return 8.0; });
  EXPECT_EQ(result.best.config, TrialConfig{});
  EXPECT_DOUBLE_EQ(result.speedup, 1.0);
}

// A stand-in trainer whose runs are noisy: each configuration's runs come from its own list, in turn.
TrialRunner noisy_runner(std::map<std::string, std::vector<double>> runs, std::vector<std::string>* order = nullptr) {
  auto next = std::make_shared<std::map<std::string, size_t>>();
  return [runs = std::move(runs), next, order](const TrialConfig& c) {
    if (order) order->push_back(c.flags());
    const std::vector<double>& list = runs.at(c.flags());
    return list.at((*next)[c.flags()]++ % list.size());
  };
}

TEST(Tuner, ConfigurationsThatMakeTheSameRunAreOneTrialRepeatedInRounds) {
  // A stand-in bucket plan: every cap of 25 MB and more gives the model one bucket, whatever the first cap.
  TuneOptions options;
  options.repeats = 3;
  options.same_run = [](const TrialConfig& c) {
    return (c.bucket_mb >= 25 ? std::string("one bucket") : fmt::format("cap {}", c.bucket_mb)) + " " + c.comm_hook;
  };
  const TrialConfig def{25, 1, "allreduce"};
  std::vector<std::string> order;
  const TuneResult result =
      tune(def, candidate_grid({5, 25, 100}, {1, 5}, {"allreduce"}),
           noisy_runner({{def.flags(), {10, 11, 12}}, {TrialConfig{5, 1, "allreduce"}.flags(), {9, 9.5, 10}}}, &order),
           options);
  ASSERT_EQ(result.trials.size(), 2u);  // "one bucket" (the default and four others) and "cap 5"
  EXPECT_EQ(result.trials[0].config, def);
  EXPECT_EQ(result.trials[0].same_run.size(), 3u);  // 25/5, 100/1, 100/5
  EXPECT_EQ(result.trials[1].same_run.size(), 1u);  // 5/5 runs as 5/1
  // Rounds: each trial once per round, the default first.
  EXPECT_EQ(order, (std::vector<std::string>{def.flags(), TrialConfig{5, 1, "allreduce"}.flags(), def.flags(),
                                             TrialConfig{5, 1, "allreduce"}.flags(), def.flags(),
                                             TrialConfig{5, 1, "allreduce"}.flags()}));
  EXPECT_DOUBLE_EQ(result.baseline.steps_per_s, 11);  // the median
  EXPECT_DOUBLE_EQ(result.baseline.min_steps_per_s, 10);
  EXPECT_DOUBLE_EQ(result.baseline.max_steps_per_s, 12);
  EXPECT_NE(result.summary().find("(same run as: --bucket-mb 25 --first-bucket-mb 5 --comm-hook allreduce; "),
            std::string::npos) << result.summary();
}

TEST(Tuner, AFasterMedianWithinTheSpreadIsNoGain) {
  // The vit_tiny_test case of issue 40: 66 to 255 steps/s of noise, a candidate's median above the default's.
  const TrialConfig def{25, 1, "allreduce"}, other{25, 5, "bf16"};
  const TuneResult noise = tune(def, {other}, noisy_runner({{def.flags(), {66, 255, 120}}, {other.flags(), {130, 140, 150}}}));
  EXPECT_EQ(noise.best.config, def);
  EXPECT_FALSE(noise.gain_beyond_spread);
  EXPECT_DOUBLE_EQ(noise.speedup, 1.0);
  const std::string summary = noise.summary();
  EXPECT_NE(summary.find("# best: the default (--bucket-mb 25 --first-bucket-mb 1 --comm-hook allreduce): no "
                         "configuration was faster beyond the spread of 3 runs each"), std::string::npos) << summary;
  EXPECT_NE(summary.find("is within the noise"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("x the default"), std::string::npos) << summary;
  // Beyond the spread: the candidate's slowest run beats the default's fastest.
  const TuneResult gain = tune(def, {other}, noisy_runner({{def.flags(), {10, 10.5, 11}}, {other.flags(), {14, 16, 15}}}));
  EXPECT_EQ(gain.best.config, other);
  EXPECT_TRUE(gain.gain_beyond_spread);
  EXPECT_DOUBLE_EQ(gain.speedup, 15 / 10.5);
  EXPECT_NE(gain.summary().find("1.43x the default"), std::string::npos) << gain.summary();
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
