// ConfusionMatrix (ddpx eval's per-class accuracy and confusion table): the predicted class follows top-1's tie
// rule, so the diagonal is top-1's count; the tables show every class when there are few and the ones that matter
// when there are many; the JSON holds everything.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "train/confusion_matrix.hpp"
#include "train/evaluation.hpp"

namespace ddpx {
namespace {

TEST(ConfusionMatrix, TheDiagonalIsTopOnesCountTiesIncluded) {
  // 3 classes; image 1 ties its label with another class (top-1 counts it a hit), image 2 is wrong.
  const std::vector<float> logits = {2, 1, 0,   // label 0: right
                                     1, 1, 0,   // label 1: tied with class 0, a hit
                                     0, 3, 1,   // label 2: predicted 1
                                     0, 0, 5};  // label 2: right
  const std::vector<int32_t> labels = {0, 1, 2, 2};
  ConfusionMatrix matrix(3);
  matrix.add(logits.data(), labels.data(), 4);
  EvalTotals totals;
  accumulate_eval(logits.data(), labels.data(), 4, 3, totals);
  EXPECT_EQ(matrix.correct_of(0) + matrix.correct_of(1) + matrix.correct_of(2), totals.top1);
  EXPECT_EQ(totals.top1, 3);
  EXPECT_EQ(matrix.at(2, 1), 1);
  EXPECT_EQ(matrix.images_of(2), 2);
  const std::vector<std::string> names = {"cat", "dog", "fox"};
  const std::string table = per_class_table(matrix, names);
  EXPECT_NE(table.find("2 fox"), std::string::npos) << table;
  EXPECT_NE(table.find("50.00%"), std::string::npos) << table;
  const std::string whole = confusion_table(matrix, names);
  EXPECT_NE(whole.find("rows: true class, columns: predicted class"), std::string::npos) << whole;
  const nlohmann::json json = confusion_json(matrix, names);
  EXPECT_EQ(json["matrix"][2][1], 1);
  EXPECT_EQ(json["classes"][2]["name"], "fox");
  EXPECT_EQ(json["classes"][2]["accuracy"], 50.0);
}

TEST(ConfusionMatrix, ManyClassesShowTheLowestAccuraciesAndTheLargestConfusions) {
  const int64_t classes = 100;
  ConfusionMatrix matrix(classes);
  for (int64_t t = 0; t < classes; ++t) matrix.counts()[static_cast<size_t>(t * classes + t)] = 10;
  matrix.counts()[static_cast<size_t>(7 * classes + 3)] = 9;  // class 7: 10 of 19 right, mostly taken for 3
  const std::string rows = per_class_table(matrix, {}, 50);
  EXPECT_NE(rows.find("the 50 lowest of 100 classes (--json has every class)"), std::string::npos) << rows;
  EXPECT_NE(rows.find("\n  7 "), std::string::npos) << rows;  // the lowest comes first
  EXPECT_LT(rows.find("\n  7 "), rows.find("\n  0 ")) << rows;
  const std::string confusions = confusion_table(matrix, {}, 20);
  EXPECT_NE(confusions.find("most frequent confusions of 100 classes"), std::string::npos) << confusions;
  EXPECT_NE(confusions.find("9 x  true 7 -> predicted 3"), std::string::npos) << confusions;
}

}  // namespace
}  // namespace ddpx
