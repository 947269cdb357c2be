// Evaluation's exact sharding (2 and 3 ranks over sets no world size divides, and more), top-1/top-5 with ties,
// the loss against a hand computation, and --metrics lines.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "error_expect.hpp"
#include "train/evaluation.hpp"
#include "train/metrics_log.hpp"

namespace ddpx {
namespace {

TEST(Evaluation, ShardsCoverTheSetExactlyOnce) {
  for (int64_t total : {0, 1, 2, 7, 10, 10000, 10001, 59999}) {
    for (int world : {1, 2, 3, 4, 7, 16}) {
      int64_t expected_begin = 0, covered = 0;
      for (int rank = 0; rank < world; ++rank) {
        const auto [begin, end] = eval_shard(total, rank, world);
        EXPECT_EQ(begin, expected_begin) << total << " / " << world << " rank " << rank;
        EXPECT_LE(end - begin, total / world + 1);
        EXPECT_GE(end - begin, total / world);
        covered += end - begin;
        expected_begin = end;
      }
      EXPECT_EQ(covered, total) << total << " / " << world;
    }
  }
}

TEST(Evaluation, RanksTogetherCountWhatOneRankCounts) {
  const int64_t total = 1003, classes = 7, numel = 2;
  auto read = [&](int64_t first, int64_t count, float* images, int32_t* labels) {
    for (int64_t i = 0; i < count; ++i) {
      images[i * numel] = static_cast<float>(first + i);
      images[i * numel + 1] = 0;
      labels[i] = static_cast<int32_t>(((first + i) * 5) % classes);
    }
  };
  std::vector<int64_t> seen(total, 0);
  auto logits = [&](const float* images, int64_t count) {
    std::vector<float> out(count * classes);
    for (int64_t i = 0; i < count; ++i) {
      const auto index = static_cast<int64_t>(images[i * numel]);
      ++seen[index];
      for (int64_t j = 0; j < classes; ++j) out[i * classes + j] = std::sin(0.37f * index * (j + 1));
    }
    return out;
  };
  const EvalResult one = evaluate_set(read, logits, total, numel, classes, 64, nullptr, 0, 1);
  EXPECT_EQ(one.count, total);
  for (int world : {2, 3}) {
    std::fill(seen.begin(), seen.end(), 0);
    EvalTotals sum;
    for (int rank = 0; rank < world; ++rank) {
      const EvalResult part = evaluate_set(read, logits, total, numel, classes, 64, nullptr, rank, world);
      sum.count += part.count;
      sum.top1 += static_cast<int64_t>(std::llround(part.top1 * part.count / 100.0));
      sum.top5 += static_cast<int64_t>(std::llround(part.top5 * part.count / 100.0));
      sum.loss_sum += part.loss * part.count;
    }
    EXPECT_EQ(sum.count, total) << world;
    for (int64_t i = 0; i < total; ++i) ASSERT_EQ(seen[i], 1) << "sample " << i << " on " << world << " ranks";
    const EvalResult together = finish_eval(sum);
    EXPECT_NEAR(together.top1, one.top1, 1e-9);
    EXPECT_NEAR(together.top5, one.top5, 1e-9);
    EXPECT_NEAR(together.loss, one.loss, 1e-9);
  }
}

TEST(Evaluation, TopKCountsTiesAgainstTheLabelAndTheLossIsCrossEntropy) {
  // Row 0: label 2 is the largest; row 1: label 0 tied with another largest (counted: nothing strictly larger);
  // row 2: label is 6th largest (miss in top-5); row 3: label 5th largest (hit in top-5, miss in top-1).
  const int64_t classes = 6;
  const std::vector<float> logits = {0, 1, 5, 2, 3, 4,   7, 7, 1, 1, 1, 1,  9, 8, 7, 6, 5, 0,  9, 8, 7, 6, 5, 0};
  const std::vector<int32_t> labels = {2, 0, 5, 4};
  EvalTotals totals;
  accumulate_eval(logits.data(), labels.data(), 4, classes, totals);
  EXPECT_EQ(totals.top1, 2);
  EXPECT_EQ(totals.top5, 3);
  double expected = 0;
  for (int b = 0; b < 4; ++b) {
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(logits[b * classes + j]));
    expected += std::log(sum) - logits[b * classes + labels[b]];
  }
  EXPECT_NEAR(totals.loss_sum, expected, 1e-9);
  const EvalResult result = finish_eval(totals);
  EXPECT_DOUBLE_EQ(result.top1, 50.0);
  EXPECT_DOUBLE_EQ(result.top5, 75.0);
  const std::vector<int32_t> bad = {2, 0, 6, 4};
  testing::expect_error([&] { accumulate_eval(logits.data(), bad.data(), 4, classes, totals); },
                        {"label 6 at index 2", "6 classes"});
}

// A resumed attempt supersedes what the stopped one wrote after the checkpoint it resumes from: every step is in the
// file once (the killed attempt's steps 72 and 80 used to appear twice), and the resumed "run" line says how far the
// stopped attempt had got.
TEST(MetricsLog, AResumedAttemptSupersedesTheStepsAfterItsCheckpoint) {
  const auto path = std::filesystem::temp_directory_path() / "ddpx_test_metrics_resumed.jsonl";
  {
    MetricsLog first(path.string(), 0);
    first.run(0, "m", "d", {});
    for (int64_t step : {8, 16, 24}) first.step(step, std::nullopt, 0.1, 1.0, std::nullopt, 10, 5, 0);
    std::ofstream(path, std::ios::app) << R"({"kind": "step", "st)";  // killed mid-line
  }
  {
    MetricsLog resumed(path.string(), 20);
    resumed.run(20, "m", "d", {});
    for (int64_t step : {24, 32}) resumed.step(step, std::nullopt, 0.1, 0.5, std::nullopt, 10, 5, 0);
    resumed.end(32, "finished");
  }
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 7u);
  std::vector<int64_t> steps;
  for (const nlohmann::json& line : lines)
    if (line["kind"] == "step") steps.push_back(line["step"]);
  EXPECT_EQ(steps, (std::vector<int64_t>{8, 16, 24, 32}));
  EXPECT_EQ(lines[3]["kind"], "run");
  EXPECT_EQ(lines[3]["step"], 20);
  EXPECT_EQ(lines[3]["previous_attempt_reached"], 24);
  EXPECT_EQ(lines[4]["loss"], 0.5);  // step 24 is the resumed attempt's
  EXPECT_EQ(lines[6]["kind"], "end");
  EXPECT_EQ(lines[6]["reason"], "finished");
  std::filesystem::remove(path);
}

TEST(MetricsLog, WritesOneCompleteObjectPerLine) {
  const auto path = std::filesystem::temp_directory_path() / "ddpx_test_metrics.jsonl";
  {
    MetricsLog log(path.string(), 0);
    log.step(10, 0.5, 0.01, 2.25, std::nullopt, 1234.5, 25.5, 1.25);
    log.eval(10, 0.5, EvalResult{.loss = 0.5, .top1 = 80, .top5 = 99, .count = 100}, "ema");
  }
  const double before = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  { MetricsLog log(path.string(), 10); log.step(11, std::nullopt, 0.02, 2.0, 0.75, 10, 12, 0); }
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["kind"], "step");
  EXPECT_EQ(lines[0]["loss"], 2.25);
  EXPECT_TRUE(lines[0]["grad_norm"].is_null());
  EXPECT_EQ(lines[1]["kind"], "eval");
  EXPECT_EQ(lines[1]["top1"], 80.0);
  EXPECT_EQ(lines[1]["weights"], "ema");
  EXPECT_TRUE(lines[2]["epoch"].is_null());
  EXPECT_EQ(lines[2]["grad_norm"], 0.75);
  // Step time and data wait per step; every line stamped with Unix seconds and the seconds since its log opened.
  EXPECT_EQ(lines[0]["step_ms"], 25.5);
  EXPECT_EQ(lines[0]["data_wait_ms"], 1.25);
  for (const nlohmann::json& line : lines) {
    ASSERT_TRUE(line["time"].is_number()) << line;
    EXPECT_GT(line["time"].get<double>(), 1.7e9);
    EXPECT_GE(line["elapsed"].get<double>(), 0);
    EXPECT_LT(line["elapsed"].get<double>(), 60);
  }
  EXPECT_GE(lines[2]["time"].get<double>(), before - 0.001);
  EXPECT_LE(lines[2]["time"].get<double>(), before + 60);
  std::filesystem::remove(path);
  testing::expect_error([] { MetricsLog("/nonexistent-dir/m.jsonl", 0); }, {"--metrics", "/nonexistent-dir"});
}

}  // namespace
}  // namespace ddpx
