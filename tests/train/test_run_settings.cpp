// The table of a run's settings (train/run_settings.hpp): one row per setting; the agreed rows are the start-up
// agreement's table, unchanged, and each reads its own flag; every report row reaches the run report's config JSON
// and every checkpoint row a checkpoint's metadata. Also how data files are fingerprinted (without blocking on a
// FIFO), the DDPX_TEST_FAULT parser, and, end to end under mpirun with a different command line per rank, that
// ranks disagreeing on --steps, the resume step, --lr or --save stop at once with one message naming the setting
// and both values instead of hanging until the watchdog.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <utility>

#include "cli_runner.hpp"
#include "core/test_fault.hpp"
#include "io/checkpoint.hpp"
#include "io/safetensors.hpp"
#include "model/vit/vit_config.hpp"
#include "model/vit/vit_layout.hpp"
#include "train/checkpointing.hpp"
#include "train/run_settings.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string value_of(const std::vector<AgreedSetting>& settings, const std::string& name) {
  auto it = std::find_if(settings.begin(), settings.end(), [&](const AgreedSetting& s) { return s.name == name; });
  return it == settings.end() ? "(absent)" : it->value;
}

TEST(StartupSettings, HoldEverythingThatChangesTheMathOrTheSchedule) {
  TrainOptions options;
  options.model = "vit_tiny_test";
  options.steps = 40;
  options.optimizer.lr = 0.1f;
  options.optimizer.eps = 1e-8f;
  options.optimizer.nesterov = true;
  options.save = "w.safetensors";
  const VitLayout layout(parse_vit_spec(options.model));
  const auto settings =
      RunSettings(options, layout, {.start_step = 12, .hook_spec = "allreduce", .bucket_plan_signature = "plan"})
          .agreed();
  EXPECT_EQ(value_of(settings, "--steps"), "40");
  EXPECT_EQ(value_of(settings, "the step to start from (--resume)"), "12");
  EXPECT_EQ(value_of(settings, "--lr"), "0.1");
  EXPECT_EQ(value_of(settings, "--eps"), "1e-08");
  EXPECT_EQ(value_of(settings, "--nesterov"), "set");
  EXPECT_EQ(value_of(settings, "--save"), "given");
  EXPECT_EQ(value_of(settings, "--checkpoint-dir"), "not given");
  EXPECT_EQ(value_of(settings, "--report"), "not given");  // issue 37 item 9: on one rank only it was silent
  EXPECT_EQ(value_of(settings, "--trace"), "not given");
  EXPECT_EQ(value_of(settings, "--images"), "none");
  EXPECT_EQ(value_of(settings, "--comm-hook"), "allreduce");
  EXPECT_EQ(value_of(settings, "--randaugment/--trivial-augment/--auto-augment-policy"), "off");
  EXPECT_EQ(value_of(settings, "--random-erase"), "off");
  // Not in the table: settings ranks may differ in without changing results.
  EXPECT_EQ(value_of(settings, "--workers"), "(absent)");
  EXPECT_EQ(value_of(settings, "--log-every"), "(absent)");
}

// Whether every member of `part` (recursively, for objects) is in `whole` with the same value.
bool holds(const json& whole, const json& part) {
  if (!part.is_object()) return whole == part;
  if (!whole.is_object()) return false;
  for (const auto& [key, value] : part.items())
    if (!whole.contains(key) || !holds(whole[key], value)) return false;
  return true;
}

// A run whose every optional row is filled: classes, a schedule, --ema-decay, a command line, two Gloo ranks.
TrainOptions full_options(OptimizerKind kind) {
  TrainOptions options;
  options.model = "vit_tiny_test";
  options.batch = 3;
  options.grad_accum = 2;
  options.steps = 40;
  options.seed = 11;
  options.optimizer.kind = kind;
  options.optimizer.lr = 0.05f;
  options.optimizer.momentum = 0.9f;
  options.optimizer.dampening = 0.1f;
  options.optimizer.beta2 = 0.99f;
  options.optimizer.schedule = parse_lr_schedule("cosine");
  options.optimizer.schedule.total_steps = options.steps;
  options.recipe.ema_decay = 0.99;
  options.class_names = {"cat", "dog"};
  options.command_line = {"ddpx", "train", "--steps", "40"};
  // A torchvision command line's record (cli/torchvision_flags.hpp): reaches the report's config as an object.
  options.torchvision_settings = {{"--batch-size", "3"}, {"--lr", "0.1"}};
  options.torchvision_args = {"--batch", "3", "--lr", "0.1"};
  return options;
}
const RunFacts kTwoGlooRanks{.start_step = 4, .hook_spec = "bf16", .bucket_plan_signature = "plan", .world = 2,
                             .backend = "gloo", .reducer = true};

TEST(RunSettings, OneRowPerSettingAndTheAgreedOnesAreTheStartupAgreementsTable) {
  for (const OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw}) {
    const TrainOptions options = full_options(kind);
    const VitLayout layout(parse_vit_spec(options.model));
    const RunSettings settings(options, layout, kTwoGlooRanks);
    std::set<std::string> names;
    for (const RunSetting& row : settings.rows()) EXPECT_TRUE(names.insert(row.name).second) << row.name;
    // The agreement's table: the settings agreed before the table existed, in the same order, with those the table
    // showed were missing (the recipe, the schedule, --dampening, the class names, --warmup, --calibrate-steps,
    // evaluation: ranks differing in them trained different weights or waited on each other until the watchdog).
    std::vector<std::string> agreed;
    for (const AgreedSetting& setting : settings.agreed()) agreed.push_back(setting.name);
    EXPECT_EQ(agreed, (std::vector<std::string>{
                          "--model", "--device/--precision", "--batch", "--grad-accum", "--steps",
                          "the step to start from (--resume)", "--seed", "--optimizer", "--lr", "--momentum",
                          "--nesterov", "--dampening", "--weight-decay", "--beta1/--beta2", "--eps",
                          "--lr-schedule (with --lr-warmup-steps/-epochs, --lr-warmup-start, --lr-warmup-method, "
                          "--min-lr, --lr-step-unit)",
                          "--repeated-augment", "--label-smoothing", "--clip-grad-norm", "--no-decay",
                          "--mixup/--cutmix", "--ema-decay", "--ema-every/--ema-copy-epochs/--ema-adjust", "--data", "--randaugment/--trivial-augment/--auto-augment-policy", "--random-erase", "--shuffle-buffer", "--images", "--labels",
                          "the data's class names", "the data's fingerprint", "--allow-data-change",
                          "--comm-hook", "the bucket plan (--bucket-mb/--first-bucket-mb)", "--no-overlap",
                          "--cuda-graph", "--save", "--checkpoint-dir", "--checkpoint-every", "--comm-timeout",
                          "--report", "--trace", "--warmup", "--calibrate-steps", "--val/--eval-every",
                          "--checkpoint-every-epoch", "--val-resize"}));
    for (const RunSetting& row : settings.rows())
      if (row.agreed) EXPECT_EQ(value_of(settings.agreed(), row.name), row.text) << row.name;
  }
}

// Each agreed row reads its own setting: changing one setting changes its row's value and no other agreed row's.
TEST(RunSettings, EachAgreedRowReadsItsOwnSetting) {
  const fs::path dir = testing::fresh_dir("agreed_rows");
  const std::string file = (dir / "x.npy").string();
  std::ofstream(file) << "bytes";
  const TrainOptions base = full_options(OptimizerKind::sgd);
  const VitLayout layout(parse_vit_spec(base.model)), other_layout(parse_vit_spec("vit_small_test"));
  using Change = std::function<void(TrainOptions&, RunFacts&, const FlatLayout*&)>;
  const std::vector<std::pair<std::string, Change>> changes = {
      {"--model", [&](TrainOptions&, RunFacts&, const FlatLayout*& l) { l = &other_layout; }},
      {"--device/--precision", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.precision = Precision::bf16; }},
      {"--batch", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.batch = 4; }},
      {"--grad-accum", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.grad_accum = 3; }},
      {"--steps", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.steps = 41; }},
      {"the step to start from (--resume)", [](TrainOptions&, RunFacts& f, const FlatLayout*&) { f.start_step = 5; }},
      {"--seed", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.seed = 12; }},
      {"--optimizer",
       [](TrainOptions& o, RunFacts&, const FlatLayout*&) {
         o.optimizer.kind = OptimizerKind::adamw;
       }},
      {"--lr", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.optimizer.lr = 0.06f; }},
      {"--momentum", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.optimizer.momentum = 0.8f; }},
      {"--nesterov", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.optimizer.nesterov = true; }},
      {"--dampening", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.optimizer.dampening = 0.2f; }},
      {"--weight-decay", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.optimizer.weight_decay = 0.5f; }},
      {"--beta1/--beta2", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.optimizer.beta1 = 0.7f; }},
      {"--eps", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.optimizer.eps = 1e-6f; }},
      {"--lr-schedule (with --lr-warmup-steps/-epochs, --lr-warmup-start, --lr-warmup-method, --min-lr, "
       "--lr-step-unit)",
       [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.optimizer.schedule.warmup_steps = 4; }},
      {"--repeated-augment", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.repeated_augment = 3; }},
      {"--label-smoothing", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.recipe.label_smoothing = 0.1; }},
      {"--clip-grad-norm", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.recipe.clip_grad_norm = 1; }},
      {"--no-decay", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.recipe.no_decay = true; }},
      {"--mixup/--cutmix", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.recipe.mix.cutmix_alpha = 1; }},
      {"--ema-decay", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.recipe.ema_decay = 0.9; }},
      {"--ema-every/--ema-copy-epochs/--ema-adjust",
       [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.recipe.ema_cadence.every = 2; }},
      {"--data", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.data = DataSource::learnable; }},
      {"--randaugment/--trivial-augment/--auto-augment-policy",
       [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.image_pipeline.auto_augment = trivial_augment_wide(); }},
      {"--random-erase",
       [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.image_pipeline.random_erasing = parse_random_erase("0.25"); }},
      {"--shuffle-buffer", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.image_pipeline.shuffle_buffer = 64; }},
      {"--images", [&](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.images = file; }},
      {"--labels", [&](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.labels = file; }},
      {"the data's class names", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.class_names[1] = "cow"; }},
      {"the data's fingerprint",
       [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.data_fingerprint = "4 samples, 2 classes, contents 1"; }},
      {"--allow-data-change", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.allow_data_change = true; }},
      {"--comm-hook", [](TrainOptions&, RunFacts& f, const FlatLayout*&) { f.hook_spec = "fp16"; }},
      {"the bucket plan (--bucket-mb/--first-bucket-mb)",
       [](TrainOptions&, RunFacts& f, const FlatLayout*&) { f.bucket_plan_signature = "another plan"; }},
      {"--no-overlap", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.no_overlap = true; }},
      {"--cuda-graph", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.cuda_graph = GraphPolicy::off; }},
      {"--save", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.save = "w.safetensors"; }},
      {"--checkpoint-dir", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.checkpoint_dir = "ckpt"; }},
      {"--checkpoint-every", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.checkpoint_every = 7; }},
      {"--checkpoint-every-epoch", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.checkpoint_every_epoch = true; }},
      {"--val-resize", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.image_pipeline.eval_resize = 40; }},
      {"--comm-timeout", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.comm_timeout_s = 30; }},
      {"--report", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.report = "run.json"; }},
      {"--trace", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.trace = "run.trace.json"; }},
      {"--warmup", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.warmup_steps += 1; }},
      {"--calibrate-steps", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.calibrate_steps += 1; }},
      {"--val/--eval-every", [](TrainOptions& o, RunFacts&, const FlatLayout*&) { o.val = DataSpec(DataSource::learnable); }},
  };
  const std::vector<AgreedSetting> before = RunSettings(base, layout, kTwoGlooRanks).agreed();
  ASSERT_EQ(changes.size(), before.size());  // a change for every agreed row
  for (const auto& [name, change] : changes) {
    SCOPED_TRACE(name);
    TrainOptions options = base;
    RunFacts facts = kTwoGlooRanks;
    const FlatLayout* model = &layout;
    change(options, facts, model);
    const std::vector<AgreedSetting> after = RunSettings(options, *model, facts).agreed();
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) {
      ASSERT_EQ(after[i].name, before[i].name);
      if (before[i].name == name)
        EXPECT_NE(after[i].value, before[i].value);
      else
        EXPECT_EQ(after[i].value, before[i].value) << before[i].name;
    }
  }
  fs::remove_all(dir);
}

TEST(RunSettings, EveryReportRowReachesTheRunReportsConfig) {
  for (const OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw}) {
    const TrainOptions options = full_options(kind);
    const VitLayout layout(parse_vit_spec(options.model));
    const RunSettings settings(options, layout, kTwoGlooRanks);
    const RunConfig config = settings.report_config();
    const json written = config;
    std::set<std::string> fed;
    for (const RunSetting& row : settings.rows()) {
      if (row.report.is_null()) continue;
      EXPECT_TRUE(holds(written, row.report)) << row.name << ": " << row.report.dump();
      for (const auto& [key, value] : row.report.items()) fed.insert(key);
    }
    // Every field of the report's config comes from one row, but the recorder's own (train/run_report.hpp); the
    // default RunConfig writes workers.
    std::set<std::string> keys;
    for (const auto& [key, value] : written.items()) keys.insert(key);
    keys.erase("workers");
    EXPECT_EQ(keys, fed);
    // The values as the recorder wrote them before the table existed.
    EXPECT_EQ(config.model, "vit_tiny_test");
    EXPECT_EQ(config.batch, 3);
    EXPECT_EQ(config.grad_accum, 2);
    EXPECT_EQ(config.hook, "bf16");
    EXPECT_EQ(config.backend, "gloo");
    EXPECT_EQ(config.world, 2);
    EXPECT_TRUE(config.ddp);
    EXPECT_EQ(config.seed, 11u);
    EXPECT_EQ(config.steps, 40);
    EXPECT_TRUE(config.torchvision);
    EXPECT_EQ(config.torchvision_settings.at("--batch-size"), "3");
    EXPECT_EQ(config.torchvision_args, (std::vector<std::string>{"--batch", "3", "--lr", "0.1"}));
    EXPECT_EQ(written.get<RunConfig>(), config);  // and back
    EXPECT_EQ(config.warmup, options.warmup_steps);
    EXPECT_EQ(config.classes, options.class_names);
    EXPECT_EQ(config.command_line, options.command_line);
    EXPECT_EQ(config.optimizer, kind == OptimizerKind::sgd
                                    ? (OptimizerInfo{"sgd", 0.05, 0.9, 0, 0, 0, 0, false})
                                    : (OptimizerInfo{"adamw", 0.05, 0, 0, 0.9, 0.99, 1e-8, false}));
  }
}

TEST(RunSettings, EveryCheckpointRowReachesTheCheckpointsMetadata) {
  for (const OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw}) {
    const TrainOptions options = full_options(kind);
    const VitLayout layout(parse_vit_spec(options.model));
    const RunSettings settings(options, layout, kTwoGlooRanks);
    const fs::path dir = testing::fresh_dir(kind == OptimizerKind::sgd ? "settings_sgd" : "settings_adamw");
    const std::vector<float> params(layout.buffer_size(), 0.f);
    HostOptimizerState state;
    for (const std::string& name : options.optimizer.state_names())
      state.buffers.push_back({name, std::vector<float>(layout.buffer_size(), 0.f)});
    state.weight_average.assign(layout.buffer_size(), 0.f);
    state.weight_average_updates = 6;
    save_training_checkpoint(dir, layout, params.data(), options, settings, state, 6);
    json metadata;
    const SafetensorsReader reader(checkpoint_file(dir));
    for (const auto& [key, value] : reader.metadata())
      metadata[key] = key == "extra" || key == "optimizer_options" ? json::parse(value) : json(value);
    std::set<std::string> fed = {"ema_updates"};  // the weight average's state, beside its buffer
    for (const RunSetting& row : settings.rows()) {
      if (row.checkpoint.is_null()) continue;
      EXPECT_TRUE(holds(metadata, row.checkpoint)) << row.name << ": " << row.checkpoint.dump();
      if (row.checkpoint.contains("extra"))
        for (const auto& [key, value] : row.checkpoint["extra"].items()) fed.insert(key);
    }
    std::set<std::string> extra;
    for (const auto& [key, value] : metadata["extra"].items()) extra.insert(key);
    EXPECT_EQ(extra, fed);  // nothing in extra that no row accounts for
    EXPECT_EQ(extra, (std::set<std::string>{"attempt_starts", "batch", "classes", "data", "ema_decay", "ema_updates",
                                            "grad_accum", "lr_schedule", "seed"}));
    // And the run that wrote it resumes from it, knowing the attempts before it (one, from step 0).
    std::vector<float> loaded(layout.buffer_size());
    const LoadedCheckpoint resumed = load_training_checkpoint(dir, layout, options, loaded.data(), 1);
    EXPECT_EQ(resumed.step, 6);
    EXPECT_EQ(resumed.attempt_starts, (std::vector<int64_t>{0}));
    fs::remove_all(dir);
  }
}

TEST(StartupSettings, FingerprintsDataFilesWithoutBlocking) {
  const fs::path dir = testing::fresh_dir("fingerprint");
  const fs::path a = dir / "a.npy", b = dir / "b.npy", fifo = dir / "fifo.npy";
  std::string bytes(200000, 'x');
  std::ofstream(a, std::ios::binary) << bytes;
  bytes.back() = 'y';
  std::ofstream(b, std::ios::binary) << bytes;
  const std::string fa = file_fingerprint(a.string());
  EXPECT_EQ(fa.rfind("200000 bytes, fingerprint ", 0), 0u) << fa;
  EXPECT_EQ(file_fingerprint(a.string()), fa);
  EXPECT_NE(file_fingerprint(b.string()), fa);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(file_fingerprint(fifo.string()), "not a regular file");  // returns at once: nobody writes to it
  EXPECT_EQ(file_fingerprint((dir / "missing.npy").string()), "missing or unreadable: No such file or directory");
  fs::remove_all(dir);
}

TEST(TestFaultHook, ParsesPhaseOccurrenceRankKindAndSeconds) {
  using test_fault_detail::parse;
  const auto spec = parse("write-checkpoint.safetensors@2:1:slow:5");
  EXPECT_EQ(spec.error, "");
  EXPECT_EQ(spec.phase, "write-checkpoint.safetensors");
  EXPECT_EQ(spec.occurrence, 2);
  EXPECT_EQ(spec.rank, 1);
  EXPECT_EQ(spec.kind, "slow");
  EXPECT_EQ(spec.seconds, 5u);
  EXPECT_FALSE(parse("").active);
  for (const char* bad : {"agreement", "agreement:1", "agreement:x:kill", "agreement:1:explode", "a@0:1:kill",
                          "agreement:1:slow:-3"})
    EXPECT_NE(parse(bad).error.find("is not PHASE[@N]:RANK:KIND[:SECONDS]"), std::string::npos) << bad;
}

// `mpirun -np 1 ddpx train A : -np 1 ddpx train B`: rank 0 runs A, rank 1 runs B.
testing::CliResult run_two_ranks(const std::string& rank0_args, const std::string& rank1_args) {
  std::string mpirun = "mpirun --oversubscribe";
  if (::geteuid() == 0) mpirun += " --allow-run-as-root";
  const std::string common = " train --device cpu --model vit_tiny_test --batch 2 --workers 1 --comm-timeout 60 ";
  const std::string binary = DDPX_BINARY;
  const std::string command = "env -u RANK -u WORLD_SIZE -u DDPX_TEST_FAULT OMPI_ALLOW_RUN_AS_ROOT=1 "
                              "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 " + mpirun + " -np 1 " + binary + common +
                              rank0_args + " : -np 1 " + binary + common + rank1_args + " 2>&1";
  testing::CliResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 512> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe)) result.output += buffer.data();
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

void expect_refused(const testing::CliResult& run, const std::string& message) {
  EXPECT_NE(run.status, 0) << run.output;
  EXPECT_NE(run.output.find(message), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("timed out"), std::string::npos) << run.output;  // refused at once, not a hang
}

TEST(StartupAgreement, RanksDisagreeingOnTheScheduleOrTheMathStopAtOnceNamingBothValues) {
  expect_refused(run_two_ranks("--steps 5", "--steps 6"), "ranks disagree on --steps: rank 0 has '5', rank 1 has '6'");
  expect_refused(run_two_ranks("--steps 3 --lr 0.01", "--steps 3 --lr 0.1"),
                 "ranks disagree on --lr: rank 0 has '0.01', rank 1 has '0.1'");
  const fs::path dir = testing::fresh_dir("agreement_save");
  const std::string save = (dir / "w.safetensors").string();
  expect_refused(run_two_ranks("--steps 3", "--steps 3 --save " + save),
                 "ranks disagree on --save: rank 0 has 'not given', rank 1 has 'given'");
  EXPECT_FALSE(fs::exists(save));
  fs::remove_all(dir);
}

TEST(StartupAgreement, RanksResumingFromDifferentStepsStopAtOnce) {
  const fs::path dir = testing::fresh_dir("agreement_resume");
  for (int steps : {2, 4}) {
    const testing::CliResult made = testing::run_ddpx(
        "train --device cpu --model vit_tiny_test --batch 2 --workers 1 --quiet --steps " + std::to_string(steps) +
        " --checkpoint-dir " + (dir / std::to_string(steps)).string());
    ASSERT_EQ(made.status, 0) << made.output;
  }
  expect_refused(run_two_ranks("--steps 6 --resume " + (dir / "2").string(), "--steps 6 --resume " + (dir / "4").string()),
                 "ranks disagree on the step to start from (--resume): rank 0 has '2', rank 1 has '4'");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
