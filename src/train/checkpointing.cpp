// Bridges engine optimizer state (HostOptimizerState) and io/checkpoint's Optimizer-based format: the host
// Optimizer is built from the run's optimizer spec, so the state names are the spec's.
#include "train/checkpointing.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string_view>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "io/checkpoint.hpp"

namespace ddpx {
namespace {

constexpr std::string_view kWeightAverageBuffer = "ema";

// The checkpoint's weight average into `loaded`, refused unless the run has the checkpoint's --ema-decay: an average
// restarted, dropped or blended at another rate would not continue the uninterrupted run's.
void restore_weight_average(const std::filesystem::path& dir, CheckpointState& ckpt, const TrainOptions& options,
                            HostOptimizerState& loaded) {
  const auto found = std::find_if(ckpt.buffers.begin(), ckpt.buffers.end(),
                                  [](const auto& buffer) { return buffer.first == kWeightAverageBuffer; });
  const double run_decay = options.recipe.ema_decay;
  if (found == ckpt.buffers.end()) {
    DDPX_REQUIRE(run_decay == 0,
                 "--resume {}: the checkpoint holds no weight average (it was trained without --ema-decay), this run "
                 "has --ema-decay {}; resume without --ema-decay, or start a new run to average from step 1",
                 dir.string(), run_decay);
    return;
  }
  const nlohmann::json& extra = ckpt.extra;
  DDPX_REQUIRE(extra.is_object() && extra.contains("ema_decay") && extra["ema_decay"].is_number() &&
                   extra.contains("ema_updates") && extra["ema_updates"].is_number_integer() &&
                   extra["ema_updates"].get<int64_t>() >= 0,
               "--resume {}: the checkpoint holds a weight average but not its 'ema_decay' and 'ema_updates'; the "
               "file is damaged", dir.string());
  const double saved_decay = extra["ema_decay"].get<double>();
  DDPX_REQUIRE(run_decay == saved_decay,
               "--resume {}: the checkpoint was trained with --ema-decay {}, this run has {}; resume with --ema-decay "
               "{} so the weight average continues", dir.string(), saved_decay,
               run_decay == 0 ? std::string("none") : fmt::format("--ema-decay {}", run_decay), saved_decay);
  // --ema-every, --ema-copy-epochs, --ema-adjust: the average continues only on the same cadence (run_settings.cpp
  // writes "ema_cadence" when any differs from its default).
  const RecipeOptions& recipe = options.recipe;
  const std::string cadence =
      recipe.ema_cadence.every_step() && recipe.ema_adjust == EmaAdjust::none
          ? std::string()
          : fmt::format("every {}, copy {} epoch(s), adjust {}", recipe.ema_cadence.every,
                        recipe.ema_cadence.copy_epochs, ema_adjust_name(recipe.ema_adjust));
  const std::string saved_cadence = extra.value("ema_cadence", std::string());
  DDPX_REQUIRE(saved_cadence == cadence,
               "--resume {}: the checkpoint's weight average was updated {}, this run's {}; resume with the same "
               "--ema-every, --ema-copy-epochs and --ema-adjust", dir.string(),
               saved_cadence.empty() ? std::string("every step (the defaults)") : saved_cadence,
               cadence.empty() ? std::string("every step (the defaults)") : cadence);
  loaded.weight_average = std::move(found->second);
  loaded.weight_average_updates = extra["ema_updates"].get<int64_t>();
}

// The data a checkpoint was trained on against this run's (issue 48: `mv data/c0 data/c9` permuted the labels and
// the run resumed): other class names, or the same in another order, are refused whatever the flags (the head's
// outputs would mean other classes); other contents (files added, removed or replaced, another pack or shards) are
// refused unless --allow-data-change, which the run report records.
void require_same_data(const std::filesystem::path& dir, const nlohmann::json& extra, const TrainOptions& options) {
  if (extra.contains("classes") && extra["classes"].is_array() && !options.class_names.empty()) {
    const nlohmann::json run_classes = options.class_names;
    DDPX_REQUIRE(extra["classes"] == run_classes,
                 "--resume {}: the checkpoint was trained on the classes [{}], this run's --data {} has [{}]{}: "
                 "labels are class indices, so the model's outputs would mean other classes; resume on the data it "
                 "was trained on, or start a new run (--load its weights with --reset-head to fine-tune)",
                 dir.string(), fmt::join(extra["classes"].get<std::vector<std::string>>(), ", "),
                 options.data.text(), fmt::join(options.class_names, ", "),
                 extra["classes"].size() == run_classes.size() ? " (another order or other names)" : "");
  }
  if (!extra.contains("data_fingerprint") || options.data_fingerprint.empty()) return;
  const std::string saved = extra["data_fingerprint"].is_string() ? extra["data_fingerprint"].get<std::string>() : "";
  DDPX_REQUIRE(saved == options.data_fingerprint || options.allow_data_change,
               "--resume {}: --data {} is not the data the checkpoint was trained on (checkpoint: {}; now: {}): files "
               "were added, removed or replaced, so the epochs would not continue the same stream; restore the data, "
               "or give --allow-data-change to resume on the new data (the run report records it)", dir.string(),
               options.data.text(), saved.empty() ? "unreadable" : saved, options.data_fingerprint);
}

// data_position as prepare_training_checkpoint writes it: whole numbers, micro_batch >= 0, world >= 1, and with
// epochs, epoch and batch_in_epoch agreeing with micro_batch / batches_per_epoch. Checked now, although only world
// is read today: a field a later version reads must not be trusted then (issue 48).
void require_valid_position(const std::filesystem::path& dir, const nlohmann::json& position) {
  if (position.is_null()) return;
  const auto whole = [&](const char* key, int64_t least) {
    return position.contains(key) && position[key].is_number_integer() && position[key].get<int64_t>() >= least;
  };
  bool valid = position.is_object() && whole("micro_batch", 0) && whole("world", 1);
  if (valid && position.contains("batches_per_epoch")) {
    valid = whole("batches_per_epoch", 1) && whole("epoch", 0) && whole("batch_in_epoch", 0);
    if (valid) {
      const int64_t micro = position["micro_batch"].get<int64_t>(), per = position["batches_per_epoch"].get<int64_t>();
      valid = position["epoch"].get<int64_t>() == micro / per && position["batch_in_epoch"].get<int64_t>() == micro % per;
    }
  }
  DDPX_REQUIRE(valid, "--resume {}: the checkpoint's data_position {} is not a position ddpx writes (whole numbers: "
               "micro_batch, world, and with epochs batches_per_epoch, epoch, batch_in_epoch that agree); the file "
               "is damaged", dir.string(), position.dump().substr(0, 200));
}

}  // namespace

void save_training_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout, const float* params,
                              const TrainOptions& options, const RunSettings& settings,
                              const HostOptimizerState& state, int64_t step, const DataPosition& position) {
  prepare_training_checkpoint(dir, layout, params, options, settings, state, step, position).commit();
}

PendingCheckpoint prepare_training_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout,
                                              const float* params, const TrainOptions& options,
                                              const RunSettings& settings, const HostOptimizerState& state,
                                              int64_t step, const DataPosition& position) {
  auto optimizer = std::make_unique<Optimizer>(options.optimizer, layout.buffer_size());
  for (const auto& [name, values] : state.buffers) {
    auto target = optimizer->state(name);
    DDPX_REQUIRE(target.size() == values.size(), "optimizer state '{}' has {} elements, expected {}", name,
                 values.size(), target.size());
    std::copy(values.begin(), values.end(), target.begin());
  }
  optimizer->set_step_count(step);
  CheckpointState ckpt;
  ckpt.step = step;
  ckpt.extra = settings.checkpoint_extra();
  // --ema-decay: the average and its update count, so a resume continues it bit for bit (optim/weight_average.hpp);
  // the table records the decay exactly when the engine keeps an average.
  DDPX_INTERNAL_ASSERT(state.weight_average.empty() != ckpt.extra.contains("ema_decay"),
                       "a weight average of {} elements with --ema-decay {}", state.weight_average.size(),
                       options.recipe.ema_decay);
  if (!state.weight_average.empty()) {
    ckpt.buffers.push_back({std::string(kWeightAverageBuffer), state.weight_average});
    ckpt.extra["ema_updates"] = state.weight_average_updates;
  }
  ckpt.data_position = {{"micro_batch", position.micro_batch}, {"world", position.world}};
  if (position.batches_per_epoch > 0) {
    ckpt.data_position["batches_per_epoch"] = position.batches_per_epoch;
    ckpt.data_position["epoch"] = position.micro_batch / position.batches_per_epoch;
    ckpt.data_position["batch_in_epoch"] = position.micro_batch % position.batches_per_epoch;
  }
  return prepare_checkpoint(dir, layout, params, *optimizer, ckpt, options.keep_checkpoints);
}

LoadedCheckpoint load_training_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout,
                                          const TrainOptions& options, float* params, int world) {
  auto optimizer = std::make_unique<Optimizer>(options.optimizer, layout.buffer_size());
  CheckpointState ckpt = load_checkpoint(dir, layout, params, *optimizer);
  if (ckpt.extra.is_object()) {
    // The data stream of a resumed run continues only with the same flags that shape it.
    const auto same = [&](const char* key, const char* flag, const auto& value, std::string_view hint) {
      DDPX_REQUIRE(!ckpt.extra.contains(key) || ckpt.extra[key] == value,
                   "--resume {}: the checkpoint was trained with {} {}, this run has {} {}{}", dir.string(), flag,
                   ckpt.extra[key].dump(), flag, value, hint);
    };
    same("batch", "--batch", options.batch, "; resume with the same batch so the data stream continues");
    same("seed", "--seed", options.seed, "");
    same("data", "--data", options.data.text(), "; resume on the same data");
    same("shuffle_buffer", "--shuffle-buffer", shuffle_buffer_text(options.image_pipeline.shuffle_buffer),
         "; resume with the same buffer so the data stream continues");
    if (ckpt.extra.contains("lr_schedule") || options.optimizer.schedule.varies())
      DDPX_REQUIRE(ckpt.extra.value("lr_schedule", std::string("constant")) ==
                       (options.optimizer.schedule.varies() ? options.optimizer.schedule.describe() : "constant"),
                   "--resume {}: the checkpoint was trained with --lr-schedule {}, this run has {}; resume with the "
                   "same --lr-schedule, --lr-warmup-steps/-epochs, --lr-warmup-start, --lr-warmup-method, --min-lr, "
                   "--lr-step-unit and --steps/--epochs so the rate continues", dir.string(), ckpt.extra.value("lr_schedule", std::string("constant")),
                   options.optimizer.schedule.varies() ? options.optimizer.schedule.describe() : "constant");
    same("grad_accum", "--grad-accum", options.grad_accum,
         "; resume with the same accumulation so the data stream continues");
    // Both ways (the key is written only when on): the sampler decides the data stream (Note [Repeated augmentation]).
    const int64_t saved_repeats = ckpt.extra.value("repeated_augment", int64_t{0});
    const int64_t repeats = options.repeated_augment > 1 ? options.repeated_augment : 0;
    DDPX_REQUIRE(saved_repeats == repeats,
                 "--resume {}: the checkpoint was trained with --repeated-augment {}, this run has {}; resume with the "
                 "same --repeated-augment so the data stream continues", dir.string(), saved_repeats, repeats);
    require_same_data(dir, ckpt.extra, options);
  }
  // Epochs (image sources, npy) are cut per world size: the same stream continues only with as many ranks.
  const nlohmann::json& position = ckpt.data_position;
  require_valid_position(dir, position);
  if (position.is_object() && position.contains("batches_per_epoch") && position.contains("world")) {
    DDPX_REQUIRE(position["world"] == world,
                 "--resume {}: the checkpoint stopped at epoch {}, batch {} of {} with {} rank(s); this run has {}: "
                 "resume with {} rank(s) so every rank continues its own share of the epoch",
                 dir.string(), position.value("epoch", 0), position.value("batch_in_epoch", 0),
                 position.value("batches_per_epoch", 0), position["world"].dump(), world, position["world"].dump());
  }
  LoadedCheckpoint loaded;
  restore_weight_average(dir, ckpt, options, loaded.optimizer);
  loaded.step = ckpt.step;
  loaded.optimizer.step = optimizer->step_count();
  if (ckpt.extra.is_object() && ckpt.extra.contains("attempt_starts") && ckpt.extra["attempt_starts"].is_array())
    for (const nlohmann::json& start : ckpt.extra["attempt_starts"])
      if (start.is_number_integer() && start.get<int64_t>() >= 0 && start.get<int64_t>() < ckpt.step)
        loaded.attempt_starts.push_back(start.get<int64_t>());
  for (const auto& name : optimizer->state_names()) {
    auto values = optimizer->state(name);
    loaded.optimizer.buffers.push_back({name, std::vector<float>(values.begin(), values.end())});
  }
  return loaded;
}

}  // namespace ddpx
