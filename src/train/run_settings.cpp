// The table of the run's settings; see run_settings.hpp for what is in it and where each row goes.
#include "train/run_settings.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/fnv1a.hpp"
#include "optim/hyperparameter.hpp"
#include "train/data_classes.hpp"

namespace ddpx {
namespace {

constexpr size_t kFingerprintBytes = 64 * 1024;

std::string given(const std::string& value) { return value.empty() ? "not given" : "given"; }

}  // namespace

std::string file_fingerprint(const std::string& path) {
  if (path.empty()) return "none";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fmt::format("missing or unreadable: {}", std::strerror(errno));
  struct stat info {};
  std::string result;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    result = "not a regular file";
  } else {
    const uint64_t size = static_cast<uint64_t>(info.st_size);
    std::vector<unsigned char> bytes(kFingerprintBytes);
    uint64_t hash = kFnv1aOffset;
    bool readable = true;
    for (uint64_t offset : {uint64_t{0}, size > kFingerprintBytes ? size - kFingerprintBytes : uint64_t{0}}) {
      const ssize_t got = ::pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
      if (got < 0) readable = false;
      if (got > 0) hash = fnv1a(bytes.data(), static_cast<size_t>(got), hash);
    }
    result = readable ? fmt::format("{} bytes, fingerprint {:016x}", size, hash)
                      : fmt::format("unreadable: {}", std::strerror(errno));
  }
  ::close(fd);
  return result;
}

RunSettings::RunSettings(const TrainOptions& options, const FlatLayout& layout, const RunFacts& facts) {
  using json = nlohmann::json;
  auto number = [](auto value) { return fmt::format("{}", value); };
  const OptimizerSpec& optimizer = options.optimizer;
  const bool sgd = optimizer.kind == OptimizerKind::sgd;
  // Patches: of the report's config JSON; of the checkpoint's metadata, its "extra" (the trainer's fields) or a
  // format field io/checkpoint writes itself; of the report's optimizer object and the checkpoint's optimizer
  // options, which hold only the optimizer's own hyperparameters.
  auto report = [](const char* key, json value) { return json{{key, std::move(value)}}; };
  auto extra = [](const char* key, json value) { return json{{"extra", {{key, std::move(value)}}}}; };
  auto hyperparameter = [](const char* key, json value) { return json{{"optimizer", {{key, value}}}}; };
  auto optimizer_option = [](const char* key, json value) { return json{{"optimizer_options", {{key, value}}}}; };
  auto when = [](bool applies, json patch) { return applies ? std::move(patch) : json(); };
  const std::string schedule = optimizer.schedule.varies() ? optimizer.schedule.describe() : "constant";
  const RecipeOptions& recipe = options.recipe;
  const AutoAugmentSpec& auto_augment = options.image_pipeline.auto_augment;
  const std::vector<std::string>& classes = options.class_names;
  // A table, read down its columns: name, text, agreed, report, checkpoint.
  // clang-format off
  rows_ = {
      {"--model", layout.spec(), true, report("model", trained_model_spec(options)), json{{"model", layout.spec()}}},
      {"--device/--precision", fmt::format("{}/{}", device_name(options.device), precision_name(options.precision)),
       true, report("precision", precision_name(options.precision)), {}},
      {"--batch", std::to_string(options.batch), true, report("batch", options.batch), extra("batch", options.batch)},
      {"--grad-accum", std::to_string(options.grad_accum), true,
       report("grad_accum", static_cast<int>(options.grad_accum)), extra("grad_accum", options.grad_accum)},
      {"--steps", std::to_string(options.steps), true, report("steps", options.steps), {}},
      {"the step to start from (--resume)", std::to_string(facts.start_step), true, {}, {}},
      {"--seed", std::to_string(options.seed), true, report("seed", options.seed), extra("seed", options.seed)},
      {"--optimizer", std::string(optimizer.name()), true, hyperparameter("name", optimizer.name()),
       json{{"optimizer", optimizer.name()}}},
      {"--lr", number(optimizer.lr), true, hyperparameter("lr", typed_decimal(optimizer.lr)),
       optimizer_option("lr", typed_decimal(optimizer.lr))},
      {"--momentum", number(optimizer.momentum), true,
       when(sgd, hyperparameter("momentum", typed_decimal(optimizer.momentum))),
       when(sgd, optimizer_option("momentum", typed_decimal(optimizer.momentum)))},
      {"--nesterov", optimizer.nesterov ? "set" : "not set", true,
       when(sgd, hyperparameter("nesterov", optimizer.nesterov)),
       when(sgd, optimizer_option("nesterov", optimizer.nesterov))},
      {"--dampening", number(optimizer.dampening), true, {},
       when(sgd, optimizer_option("dampening", typed_decimal(optimizer.dampening)))},
      {"--weight-decay", number(optimizer.weight_decay), true,
       hyperparameter("weight_decay", typed_decimal(optimizer.weight_decay)),
       optimizer_option("weight_decay", typed_decimal(optimizer.weight_decay))},
      {"--beta1/--beta2", number(optimizer.beta1) + "/" + number(optimizer.beta2), true,
       when(!sgd, json{{"optimizer",
                        {{"beta1", typed_decimal(optimizer.beta1)}, {"beta2", typed_decimal(optimizer.beta2)}}}}),
       when(!sgd, json{{"optimizer_options",
                        {{"beta1", typed_decimal(optimizer.beta1)}, {"beta2", typed_decimal(optimizer.beta2)}}}})},
      {"--eps", number(optimizer.eps), true, when(!sgd, hyperparameter("eps", typed_decimal(optimizer.eps))),
       when(!sgd, optimizer_option("eps", typed_decimal(optimizer.eps)))},
      // The schedule is a function of the absolute step, so a resume continues it exactly, with the same flags.
      {"--lr-schedule (with --lr-warmup-steps/-epochs, --lr-warmup-start, --lr-warmup-method, --min-lr, "
       "--lr-step-unit)", schedule, true,
       when(optimizer.schedule.varies(),
            json{{"lr_schedule", schedule},
                 {"lr_warmup_method", lr_warmup_method_name(optimizer.schedule.warmup_method)},
                 {"lr_step_unit", lr_step_unit_name(optimizer.schedule.unit)}}),
       when(optimizer.schedule.varies(), extra("lr_schedule", schedule))},
      // The sampler decides which samples every rank sees (Note [Repeated augmentation]): the run's math.
      {"--repeated-augment", std::to_string(options.repeated_augment), true,
       when(options.repeated_augment > 1, report("repeated_augment", options.repeated_augment)),
       when(options.repeated_augment > 1, extra("repeated_augment", options.repeated_augment))},
      {"--label-smoothing", number(recipe.label_smoothing), true, {}, {}},
      {"--clip-grad-norm", number(recipe.clip_grad_norm), true, {}, {}},
      {"--no-decay", recipe.no_decay ? "set" : "not set", true, {}, {}},
      {"--mixup/--cutmix", number(recipe.mix.mixup_alpha) + "/" + number(recipe.mix.cutmix_alpha), true, {}, {}},
      // With the weight average itself and its update count (train/checkpointing.cpp), so a resume continues it.
      {"--ema-decay", number(recipe.ema_decay), true,
       when(recipe.ema_decay != 0, json{{"ema_decay", recipe.ema_decay}, {"ema_decay_used", recipe.ema_decay_in_use()},
                                        {"ema_every", recipe.ema_cadence.every},
                                        {"ema_copy_epochs", recipe.ema_cadence.copy_epochs},
                                        {"ema_adjust", ema_adjust_name(recipe.ema_adjust)}}),
       when(recipe.ema_decay != 0, extra("ema_decay", recipe.ema_decay))},
      // The cadence and the decay in use shape the average a resume continues (train/checkpointing.cpp).
      {"--ema-every/--ema-copy-epochs/--ema-adjust",
       fmt::format("{}/{}/{}", recipe.ema_cadence.every, recipe.ema_cadence.copy_epochs,
                   ema_adjust_name(recipe.ema_adjust)),
       true, {},
       when(recipe.ema_decay != 0 && (!recipe.ema_cadence.every_step() || recipe.ema_adjust != EmaAdjust::none),
            extra("ema_cadence", fmt::format("every {}, copy {} epoch(s), adjust {}", recipe.ema_cadence.every,
                                             recipe.ema_cadence.copy_epochs, ema_adjust_name(recipe.ema_adjust))))},
      {"--data", options.data.text(), true, report("data", options.data.text()), extra("data", options.data.text())},
      // The augmentations change what every rank trains on (the loader applies them to the data: the run's math).
      {"--randaugment/--trivial-augment/--auto-augment-policy", auto_augment.describe(), true, {}, {}},
      {"--random-erase", options.image_pipeline.random_erasing.enabled()
                             ? options.image_pipeline.random_erasing.describe() : "off", true, {}, {}},
      // wds: the buffer decides the order of the samples (Note [Shuffle buffer]); a resume continues it only as is.
      {"--shuffle-buffer", shuffle_buffer_text(options.image_pipeline.shuffle_buffer), true, {},
       when(options.data.source == DataSource::wds,
            extra("shuffle_buffer", shuffle_buffer_text(options.image_pipeline.shuffle_buffer)))},
      {"--images", file_fingerprint(options.images), true, {}, {}},
      {"--labels", file_fingerprint(options.labels), true, {}, {}},
      {"the data's class names", fmt::format("{}", fmt::join(classes, ", ")), true,
       when(!classes.empty(), report("classes", classes)), when(!classes.empty(), extra("classes", classes))},
      // What the data held (train/checkpointing.cpp compares it on --resume; --allow-data-change lets it differ).
      {"the data's fingerprint", options.data_fingerprint.empty() ? "none" : options.data_fingerprint, true,
       when(!options.data_fingerprint.empty(), report("data_fingerprint", options.data_fingerprint)),
       when(!options.data_fingerprint.empty(), extra("data_fingerprint", options.data_fingerprint))},
      {"--allow-data-change", options.allow_data_change ? "set" : "not set", true,
       when(options.allow_data_change, report("allow_data_change", true)), {}},
      {"--comm-hook", facts.hook_spec, true, report("hook", facts.hook_spec), {}},
      {"the bucket plan (--bucket-mb/--first-bucket-mb)", facts.bucket_plan_signature, true,
       json{{"bucket_mb", options.bucket_mb}, {"first_bucket_mb", options.first_bucket_mb}}, {}},
      {"--no-overlap", options.no_overlap ? "set" : "not set", true, report("overlap", !options.no_overlap), {}},
      {"--cuda-graph", std::string(graph_policy_name(options.cuda_graph)), true, {}, {}},
      {"--save", given(options.save), true, {}, {}},
      {"--checkpoint-dir", given(options.checkpoint_dir), true, {}, {}},
      {"--checkpoint-every", std::to_string(options.checkpoint_every), true, {}, {}},
      {"--comm-timeout", number(options.comm_timeout_s), true, {}, {}},
      // Every rank records its steps for the report and the trace, which rank 0 gathers: given on one rank only,
      // it was silently ignored (issue 37 item 9).
      {"--report", given(options.report), true, {}, {}},
      {"--trace", given(options.trace), true, {}, {}},
      // The calibration steps sit at the end of the warm-up and reduce the whole buffer at once while other steps
      // reduce buckets, so ranks must agree on both (and an evaluation gathers across ranks: --val/--eval-every).
      {"--warmup", std::to_string(options.warmup_steps), true, report("warmup", options.warmup_steps), {}},
      {"--calibrate-steps", std::to_string(options.calibrate_steps), true, {}, {}},
      {"--val/--eval-every",
       options.val ? fmt::format("{} at {}", options.val->text(),
                                 options.eval_every.empty() ? (options.epochs > 0 ? "each epoch's end" : "the end")
                                                            : "every " + options.eval_every)
                   : "none",
       true, {}, {}},
      {"the number of ranks", std::to_string(facts.world), false, report("world", facts.world), {}},
      {"--backend", facts.backend.empty() ? "none" : facts.backend, false,
       when(!facts.backend.empty(), report("backend", facts.backend)), {}},
      {"the reducer (--ddp, or several ranks)", facts.reducer ? "attached" : "none", false,
       report("ddp", facts.reducer), {}},
      {"the run's attempts (--resume)", fmt::format("started at steps {}", fmt::join(facts.attempt_starts, ", ")),
       false, {}, extra("attempt_starts", facts.attempt_starts)},
      {"--checkpoint-every-epoch", options.checkpoint_every_epoch ? "set" : "not set", true, {}, {}},
      {"--val-resize", std::to_string(options.image_pipeline.eval_resize), true, {}, {}},
      // A torchvision command line: what it set (given or train.py's default) and what that became.
      {"the torchvision command line", fmt::format("{}", fmt::join(options.torchvision_args, " ")), false,
       when(!options.torchvision_settings.empty(),
            json{{"torchvision",
                  {{"command_line", true}, {"settings", options.torchvision_settings},
                   {"ddpx_args", options.torchvision_args}}}}),
       {}},
      {"the command line", fmt::format("{}", fmt::join(options.command_line, " ")), false,
       when(!options.command_line.empty(), report("command_line", options.command_line)), {}},
  };
  // clang-format on
}

std::vector<RunAttempt> run_attempts(const std::vector<int64_t>& starts, int64_t end_step) {
  std::vector<RunAttempt> attempts;
  for (size_t k = 0; k < starts.size(); ++k) {
    const bool last = k + 1 == starts.size();
    attempts.push_back({starts[k], last ? end_step : starts[k + 1],
                        last ? "finished"
                             : fmt::format("stopped; the next attempt resumed from its checkpoint at step {}",
                                           starts[k + 1])});
  }
  return attempts;
}

std::vector<int64_t> attempt_starts_after(std::vector<int64_t> recorded, int64_t start_step) {
  if (start_step == 0) return {0};
  if (recorded.empty()) recorded = {0};  // a checkpoint written before attempts were recorded: one earlier attempt
  recorded.push_back(start_step);
  return recorded;
}

std::vector<AgreedSetting> RunSettings::agreed() const {
  std::vector<AgreedSetting> settings;
  for (const RunSetting& row : rows_)
    if (row.agreed) settings.push_back({row.name, row.text});
  return settings;
}

RunConfig RunSettings::report_config() const {
  nlohmann::json config = RunConfig{};
  for (const RunSetting& row : rows_)
    if (!row.report.is_null()) config.merge_patch(row.report);
  return config.get<RunConfig>();
}

nlohmann::json RunSettings::checkpoint_extra() const {
  nlohmann::json extra = nlohmann::json::object();
  for (const RunSetting& row : rows_)
    if (row.checkpoint.contains("extra")) extra.merge_patch(row.checkpoint["extra"]);
  return extra;
}

}  // namespace ddpx
