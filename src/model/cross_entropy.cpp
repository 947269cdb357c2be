// Softmax cross-entropy (see cross_entropy.hpp for the guarantees).
#include "model/cross_entropy.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"

namespace ddpx {

template <typename T>
T softmax_cross_entropy(const T* logits, const int32_t* labels, int64_t batch, int64_t classes, T* dlogits,
                        T grad_scale) {
  DDPX_REQUIRE(batch >= 1 && classes >= 1, "softmax_cross_entropy: batch {} and classes {} must both be positive",
               batch, classes);
  for (int64_t b = 0; b < batch; ++b)  // all labels first, so a bad batch leaves dlogits untouched
    DDPX_REQUIRE(labels[b] >= 0 && labels[b] < classes,
                 "softmax_cross_entropy: label {} at batch index {} is outside [0, {}); labels must be class "
                 "indices below the model's number of classes",
                 labels[b], b, classes);
  double total = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t label = labels[b];
    const T* row = logits + b * classes;
    const double max = *std::max_element(row, row + classes);
    double sum = 0;
    for (int64_t j = 0; j < classes; ++j) sum += std::exp(row[j] - max);
    const double log_sum = max + std::log(sum);
    total += log_sum - row[label];
    if (dlogits != nullptr) {
      const double scale = static_cast<double>(grad_scale) / static_cast<double>(batch);
      for (int64_t j = 0; j < classes; ++j) {
        const double p = std::exp(row[j] - log_sum);
        dlogits[b * classes + j] = static_cast<T>(scale * (p - (j == label ? 1.0 : 0.0)));
      }
    }
  }
  return static_cast<T>(total / static_cast<double>(batch));
}

template <typename T>
T softmax_cross_entropy(const T* logits, const ClassTargets& targets, int64_t batch, int64_t classes, T* dlogits,
                        T grad_scale) {
  DDPX_REQUIRE(batch >= 1 && classes >= 1, "softmax_cross_entropy: batch {} and classes {} must both be positive",
               batch, classes);
  for (int64_t b = 0; b < batch; ++b)
    for (const int32_t* labels : {targets.labels, targets.mixed_labels})
      DDPX_REQUIRE(labels == nullptr || (labels[b] >= 0 && labels[b] < classes),
                   "softmax_cross_entropy: label {} at batch index {} is outside [0, {}); labels must be class "
                   "indices below the model's number of classes",
                   labels[b], b, classes);
  const double smoothing = targets.label_smoothing, uniform = smoothing / static_cast<double>(classes);
  const double mix = targets.mixed_labels != nullptr ? targets.mix : 1.0;
  std::vector<double> target(static_cast<size_t>(classes));
  double total = 0;
  for (int64_t b = 0; b < batch; ++b) {
    std::fill(target.begin(), target.end(), uniform);
    target[targets.labels[b]] += (1.0 - smoothing) * mix;
    if (targets.mixed_labels != nullptr) target[targets.mixed_labels[b]] += (1.0 - smoothing) * (1.0 - mix);
    const T* row = logits + b * classes;
    const double max = *std::max_element(row, row + classes);
    double sum = 0;
    for (int64_t j = 0; j < classes; ++j) sum += std::exp(row[j] - max);
    const double log_sum = max + std::log(sum);
    for (int64_t j = 0; j < classes; ++j) total += target[j] * (log_sum - row[j]);
    if (dlogits != nullptr) {
      const double scale = static_cast<double>(grad_scale) / static_cast<double>(batch);
      for (int64_t j = 0; j < classes; ++j)
        dlogits[b * classes + j] = static_cast<T>(scale * (std::exp(row[j] - log_sum) - target[j]));
    }
  }
  return static_cast<T>(total / static_cast<double>(batch));
}

template float softmax_cross_entropy<float>(const float*, const ClassTargets&, int64_t, int64_t, float*, float);
template double softmax_cross_entropy<double>(const double*, const ClassTargets&, int64_t, int64_t, double*, double);
template float softmax_cross_entropy<float>(const float*, const int32_t*, int64_t, int64_t, float*, float);
template double softmax_cross_entropy<double>(const double*, const int32_t*, int64_t, int64_t, double*, double);

}  // namespace ddpx
