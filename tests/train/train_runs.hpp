// The small training runs the trainer's tests start from, one definition each so that the family-parameterized
// tests (test_family_properties*.cpp) and the per-engine tests (test_trainer*.cpp) train the same run:
//  - family_run(model, optimizer): CPU, batch 4 of learnable data, SGD (lr 0.05, momentum 0.9) or AdamW (lr 1e-3),
//    weight decay 1e-4, seed 11; the caller sets steps and outputs.
//  - gpu_run(model): CUDA, batch 8, 12 steps of which 2 warm-up, learnable data, SGD lr 0.05 momentum 0.9, seed 5.
#pragma once
#include <string>

#include "optim/optimizer_spec.hpp"
#include "train/train_options.hpp"

namespace ddpx::testing {

inline TrainOptions family_run(const std::string& model, const std::string& optimizer) {
  TrainOptions o;
  o.model = model;
  o.batch = 4;
  o.data = DataSource::learnable;
  o.optimizer.kind = parse_optimizer_kind(optimizer);
  o.optimizer.lr = optimizer == "sgd" ? 0.05f : 1e-3f;
  o.optimizer.momentum = optimizer == "sgd" ? 0.9f : 0.f;
  o.optimizer.weight_decay = 1e-4f;
  o.workers = 2;
  o.quiet = true;
  o.seed = 11;
  return o;
}

inline TrainOptions gpu_run(const std::string& model = "vit_tiny_test") {
  TrainOptions o;
  o.device = Device::cuda;
  o.model = model;
  o.batch = 8;
  o.steps = 12;
  o.warmup_steps = 2;
  o.data = DataSource::learnable;
  o.optimizer = OptimizerSpec{.kind = OptimizerKind::sgd, .lr = 0.05f, .momentum = 0.9f};
  o.workers = 2;
  o.quiet = true;
  o.seed = 5;
  return o;
}

}  // namespace ddpx::testing
