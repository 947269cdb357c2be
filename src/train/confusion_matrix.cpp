// Per-class counts of an evaluation; see confusion_matrix.hpp.
#include "train/confusion_matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "dist/communicator.hpp"
#include "dist/host_collectives.hpp"

namespace ddpx {

ConfusionMatrix::ConfusionMatrix(int64_t classes)
    : classes_(classes), counts_(static_cast<size_t>(classes * classes), 0) {}

void ConfusionMatrix::add(const float* logits, const int32_t* labels, int64_t n) {
  for (int64_t b = 0; b < n; ++b) {
    const float* row = logits + b * classes_;
    const int64_t label = labels[b];
    const int64_t first_largest = std::max_element(row, row + classes_) - row;
    // top-1's rule: a label tied with the largest logit is a hit.
    const int64_t predicted = row[label] >= row[first_largest] ? label : first_largest;
    ++counts_[static_cast<size_t>(label * classes_ + predicted)];
  }
}

int64_t ConfusionMatrix::images_of(int64_t truth) const {
  const auto row = counts_.begin() + truth * classes_;
  return std::accumulate(row, row + classes_, int64_t{0});
}

ConfusionMatrix sum_over_ranks(Communicator* comm, const ConfusionMatrix& mine) {
  if (comm == nullptr || comm->size() == 1) return mine;
  const size_t cells = mine.counts().size();
  std::vector<int64_t> all(cells * static_cast<size_t>(comm->size()));
  all_gather_host(*comm, mine.counts().data(), all.data(), cells * sizeof(int64_t));
  ConfusionMatrix sum(mine.classes());
  for (int r = 0; r < comm->size(); ++r)  // rank order: the same sum on every rank
    for (size_t i = 0; i < cells; ++i) sum.counts()[i] += all[static_cast<size_t>(r) * cells + i];
  return sum;
}

std::string class_label(int64_t index, const std::vector<std::string>& names) {
  if (static_cast<size_t>(index) < names.size()) return fmt::format("{} {}", index, names[static_cast<size_t>(index)]);
  return std::to_string(index);
}

namespace {

double percent(int64_t part, int64_t whole) { return whole > 0 ? 100.0 * static_cast<double>(part) / whole : 0.0; }

std::string shortened(std::string text, size_t width) {
  if (text.size() > width) text = text.substr(0, width - 1) + "~";
  return text;
}

}  // namespace

std::string per_class_table(const ConfusionMatrix& matrix, const std::vector<std::string>& names, int64_t max_rows) {
  std::vector<int64_t> rows(static_cast<size_t>(matrix.classes()));
  std::iota(rows.begin(), rows.end(), int64_t{0});
  const bool all = matrix.classes() <= max_rows;
  if (!all) {  // the lowest accuracies first (classes without images last), ties by index
    const auto accuracy = [&](int64_t c) {
      return matrix.images_of(c) > 0 ? percent(matrix.correct_of(c), matrix.images_of(c)) : 101.0;
    };
    std::stable_sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) { return accuracy(a) < accuracy(b); });
    rows.resize(static_cast<size_t>(max_rows));
  }
  size_t width = 5;
  for (int64_t c : rows) width = std::max(width, std::min<size_t>(class_label(c, names).size(), 32));
  std::string out = all ? "per-class accuracy (top-1 of each true class)\n"
                        : fmt::format("per-class accuracy, the {} lowest of {} classes (--json has every class)\n",
                                      max_rows, matrix.classes());
  out += fmt::format("  {:<{}}  {:>8}  {:>9} / {}\n", "class", width, "top-1", "correct", "images");
  for (int64_t c : rows) {
    const int64_t images = matrix.images_of(c), correct = matrix.correct_of(c);
    out += fmt::format("  {:<{}}  {:>8}  {:>9} / {}\n", shortened(class_label(c, names), width), width,
                       images > 0 ? fmt::format("{:.2f}%", percent(correct, images)) : "-", correct, images);
  }
  return out;
}

std::string confusion_table(const ConfusionMatrix& matrix, const std::vector<std::string>& names, int64_t max_classes) {
  const int64_t classes = matrix.classes();
  if (classes > max_classes) {
    struct Cell {
      int64_t truth, predicted, count;
    };
    std::vector<Cell> cells;
    for (int64_t t = 0; t < classes; ++t)
      for (int64_t p = 0; p < classes; ++p)
        if (t != p && matrix.at(t, p) > 0) cells.push_back({t, p, matrix.at(t, p)});
    std::stable_sort(cells.begin(), cells.end(), [](const Cell& a, const Cell& b) { return a.count > b.count; });
    if (cells.size() > 10) cells.resize(10);
    std::string out = fmt::format("most frequent confusions of {} classes (--json has the whole matrix)\n", classes);
    if (cells.empty()) out += "  none: every image is predicted as its class\n";
    for (const Cell& c : cells)
      out += fmt::format("  {:>7} x  true {} -> predicted {}\n", c.count, class_label(c.truth, names),
                         class_label(c.predicted, names));
    return out;
  }
  int64_t largest = 0;
  for (int64_t count : matrix.counts()) largest = std::max(largest, count);
  const size_t cell = std::max(fmt::formatted_size("{}", largest), fmt::formatted_size("{}", classes - 1)) + 1;
  size_t label_width = 10;
  for (int64_t t = 0; t < classes; ++t)
    label_width = std::max(label_width, std::min<size_t>(class_label(t, names).size(), 20));
  std::string out = "confusion matrix (rows: true class, columns: predicted class, counts of images)\n";
  out += fmt::format("  {:<{}}", "true \\ pred", label_width);
  for (int64_t p = 0; p < classes; ++p) out += fmt::format("{:>{}}", p, cell);
  out += "\n";
  for (int64_t t = 0; t < classes; ++t) {
    out += fmt::format("  {:<{}}", shortened(class_label(t, names), label_width), label_width);
    for (int64_t p = 0; p < classes; ++p) out += fmt::format("{:>{}}", matrix.at(t, p), cell);
    out += "\n";
  }
  return out;
}

nlohmann::json confusion_json(const ConfusionMatrix& matrix, const std::vector<std::string>& names) {
  nlohmann::json classes = nlohmann::json::array(), rows = nlohmann::json::array();
  for (int64_t t = 0; t < matrix.classes(); ++t) {
    nlohmann::json entry = {{"index", t},
                            {"images", matrix.images_of(t)},
                            {"correct", matrix.correct_of(t)},
                            {"accuracy", percent(matrix.correct_of(t), matrix.images_of(t))}};
    if (static_cast<size_t>(t) < names.size()) entry["name"] = names[static_cast<size_t>(t)];
    classes.push_back(entry);
    nlohmann::json row = nlohmann::json::array();
    for (int64_t p = 0; p < matrix.classes(); ++p) row.push_back(matrix.at(t, p));
    rows.push_back(row);
  }
  return {{"classes", classes}, {"matrix", rows}};
}

}  // namespace ddpx
