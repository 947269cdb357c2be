// Checkpoints of a training run (train/checkpointing.hpp) store the optimizer state under the names the run's
// OptimizerSpec gives (momentum; exp_avg, exp_avg_sq), with the spec's hyperparameters, and hand them back under
// the same names; a spec whose state differs from the checkpoint's is refused naming both.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "error_expect.hpp"
#include "io/checkpoint.hpp"
#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_config.hpp"
#include "train/checkpointing.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ddpx_test_train_ckpt_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A flat buffer holding `value` in every tensor and zero in the padding (the buffers' contract).
std::vector<float> filled(const VitLayout& layout, float value) {
  std::vector<float> buffer(layout.buffer_size(), 0.f);
  for (const TensorSlot& slot : layout.tensors())
    std::fill(buffer.begin() + static_cast<std::ptrdiff_t>(slot.offset),
              buffer.begin() + static_cast<std::ptrdiff_t>(slot.offset + slot.numel), value);
  return buffer;
}

TEST(Checkpointing, StateIsStoredUnderTheSpecsNames) {
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  const std::vector<float> params = filled(layout, 0.25f);
  struct Case {
    const char* name;
    OptimizerSpec spec;
    std::vector<std::string> state;
  };
  const Case cases[] = {
      {"sgd", {.kind = OptimizerKind::sgd, .lr = 0.05f}, {}},
      {"sgd_momentum", {.kind = OptimizerKind::sgd, .lr = 0.05f, .momentum = 0.9f}, {"momentum"}},
      {"adamw", {.kind = OptimizerKind::adamw, .lr = 1e-3f, .beta2 = 0.99f}, {"exp_avg", "exp_avg_sq"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_EQ(c.spec.state_names(), c.state);
    const fs::path dir = fresh_dir(c.name);
    TrainOptions options;
    options.optimizer = c.spec;
    HostOptimizerState state;
    state.step = 3;
    for (size_t i = 0; i < c.state.size(); ++i)
      state.buffers.push_back({c.state[i], filled(layout, 0.5f + static_cast<float>(i))});
    save_training_checkpoint(dir, layout, params.data(), options, RunSettings(options, layout, {}), state, 3);

    const CheckpointInfo info = read_checkpoint_info(dir);
    EXPECT_EQ(info.optimizer, c.spec.name());
    EXPECT_EQ(info.optimizer_state, c.state);
    EXPECT_EQ(info.optimizer_options, c.spec.hyperparameters_json());
    std::vector<float> loaded_params(layout.buffer_size());
    const LoadedCheckpoint loaded = load_training_checkpoint(dir, layout, options, loaded_params.data(), 1);
    EXPECT_EQ(loaded.step, 3);
    EXPECT_EQ(loaded_params, params);
    ASSERT_EQ(loaded.optimizer.buffers.size(), c.state.size());
    for (size_t i = 0; i < c.state.size(); ++i) {
      EXPECT_EQ(loaded.optimizer.buffers[i].first, c.state[i]);
      EXPECT_EQ(loaded.optimizer.buffers[i].second, state.buffers[i].second);
    }
    fs::remove_all(dir);
  }
}

TEST(Checkpointing, ASpecWithOtherStateIsRefusedNamingBoth) {
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  const std::vector<float> params(layout.buffer_size(), 0.f);
  const fs::path dir = fresh_dir("mismatch");
  TrainOptions saved;
  saved.optimizer = {.kind = OptimizerKind::sgd, .momentum = 0.9f};
  HostOptimizerState state;
  state.buffers.push_back({"momentum", std::vector<float>(layout.buffer_size(), 0.f)});
  save_training_checkpoint(dir, layout, params.data(), saved, RunSettings(saved, layout, {}), state, 1);
  TrainOptions adamw;
  adamw.optimizer.kind = OptimizerKind::adamw;
  std::vector<float> loaded(layout.buffer_size());
  testing::expect_error([&] { (void)load_training_checkpoint(dir, layout, adamw, loaded.data(), 1); },
                        {"--optimizer sgd", "--optimizer adamw"});
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
