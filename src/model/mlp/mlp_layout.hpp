// MlpLayout: the MLP's FlatLayout (model/flat_layout.hpp) in backward order, plus typed offsets.
// Guarantees:
//  - Names and shapes are those of torch.nn.Linear modules named "hidden.<l>" and "head" (tools/make_fixtures.py
//    builds that module): hidden.<l>.weight [width, in_l], hidden.<l>.bias [width], head.weight [classes, width],
//    head.bias [classes].
//  - Order: head, then hidden layers L-1 .. 0 (weight then bias): the order the backward pass finishes them.
//  - ready_spans(): one per Linear layer in that order, the last extended to the padded buffer end.
//  - Alignment and padding as FlatLayout's; spec() is MlpConfig::spec().
#pragma once
#include <cstddef>
#include <vector>

#include "model/flat_layout.hpp"
#include "model/mlp/mlp_config.hpp"

namespace ddpx {

struct LinearOffsets {
  size_t weight = 0, bias = 0;
  int64_t in = 0, out = 0;  // weight is [out, in]
};

class MlpLayout : public FlatLayout {
 public:
  explicit MlpLayout(const MlpConfig& config);
  const MlpConfig& config() const { return config_; }

  std::vector<LinearOffsets> hidden;  // hidden[l] is "hidden.<l>"
  LinearOffsets head;

 private:
  MlpConfig config_;
};

}  // namespace ddpx
