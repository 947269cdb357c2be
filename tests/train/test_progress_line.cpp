// The progress line's fields (train/progress_line.hpp): elapsed time, ETA at this run's mean pace, the learning
// rate, and durations that read at a glance.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "train/progress_line.hpp"

namespace ddpx {
namespace {

TEST(ProgressLine, ShowsElapsedEtaAndLearningRate) {
  ProgressPoint p;
  p.step = 20;
  p.total_steps = 100;
  p.loss = 2.12345f;
  p.lr = 1e-3;
  p.steps_per_s = 4.0;
  p.images_per_step = 32;
  p.elapsed_s = 5.0;  // 20 steps in 5 s: 80 left take 20 s
  EXPECT_EQ(progress_line(p),
            "step     20/100 | loss 2.1235 | lr 0.001 |     4.00 steps/s |     128.0 images/s | 5s elapsed, ETA 20s");
}

TEST(ProgressLine, AResumedRunPacesOnlyItsOwnSteps) {
  ProgressPoint p;
  p.step = 60;
  p.start_step = 50;  // resumed at 50: 10 steps in 30 s, 40 left at 3 s each
  p.total_steps = 100;
  p.elapsed_s = 30;
  p.lr = 0.01;
  EXPECT_NE(progress_line(p).find("| lr 0.01 |"), std::string::npos) << progress_line(p);
  EXPECT_NE(progress_line(p).find("30s elapsed, ETA 2m00s"), std::string::npos) << progress_line(p);
  p.step = 50;  // nothing done yet
  EXPECT_NE(progress_line(p).find("ETA -"), std::string::npos) << progress_line(p);
}

TEST(ProgressLine, DurationsReadAtAGlance) {
  EXPECT_EQ(short_duration(0), "0s");
  EXPECT_EQ(short_duration(42.4), "42s");
  EXPECT_EQ(short_duration(59.6), "1m00s");
  EXPECT_EQ(short_duration(185), "3m05s");
  EXPECT_EQ(short_duration(3720), "1h02m");
  EXPECT_EQ(short_duration(-1), "-");
  EXPECT_EQ(short_duration(std::numeric_limits<double>::infinity()), "-");
  EXPECT_EQ(short_duration(std::nan("")), "-");
}

}  // namespace
}  // namespace ddpx
