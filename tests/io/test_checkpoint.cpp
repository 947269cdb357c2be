// Checkpoints: bit-identical save/load of parameters, optimizer state and step counts (no RNG state: none is
// needed, and files before 2026-12-05 holding some still load); resuming gives exactly the uninterrupted run;
// mismatches name both values and the flag; a crash or a failing write during a save leaves the previous
// checkpoint loadable.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "model/vit/vit_layout.hpp"
#include "core/rng.hpp"
#include "io/checkpoint.hpp"
#include "io/io_test_support.hpp"
#include "io/safetensors.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
using testing::TempDir;

struct TrainingRun {
  VitLayout layout;
  std::vector<float> params;
  std::unique_ptr<Optimizer> optimizer;
  Rng grad_rng{99};

  // given: hyperparameter flags (parse_optimizer_spec); SGD runs keep a momentum buffer (0.9) unless told.
  TrainingRun(std::string_view model, std::string_view optimizer_name, std::map<std::string, double> given)
      : layout(parse_vit_spec(model)), params(layout.buffer_size(), 0.f) {
    if (optimizer_name == "sgd") given.try_emplace("--momentum", 0.9);
    const auto given_flag = [&](std::string_view flag) -> std::optional<double> {
      const auto it = given.find(std::string(flag));
      return it == given.end() ? std::nullopt : std::optional<double>(it->second);
    };
    const OptimizerSpec spec = parse_optimizer_spec(optimizer_name, given_flag);
    optimizer = std::make_unique<Optimizer>(spec, layout.buffer_size());
    Rng init(5);
    for (const TensorSlot& slot : layout.tensors())
      for (size_t i = 0; i < slot.numel; ++i) params[slot.offset + i] = static_cast<float>(0.1 * init.normal());
  }
  // One training step with pseudo-random gradients (zero in the padding, like the real gradient buffer).
  void step() {
    std::vector<float> grads(layout.buffer_size(), 0.f);
    for (const TensorSlot& slot : layout.tensors())
      for (size_t i = 0; i < slot.numel; ++i) grads[slot.offset + i] = static_cast<float>(grad_rng.normal());
    optimizer->step(params.data(), grads.data(), grads.size());
  }
};

// Temporary files a save leaves behind (there must be none after a save, failed or not).
std::vector<std::string> temporaries(const std::filesystem::path& dir) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".tmp" || entry.path().extension() == ".link") found.push_back(entry.path());
  return found;
}

// The temporary this process's next save of dir's checkpoint would use (io/output_file.cpp's naming).
std::filesystem::path own_temporary(const std::filesystem::path& dir) {
  return dir / (".checkpoint.safetensors." + std::to_string(::getpid()) + ".tmp");
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

CheckpointState sample_state() {
  CheckpointState state;
  state.step = 1234;
  state.data_position = {{"epoch", 2}, {"index", 4096}};
  state.extra = {{"seed", 7}, {"note", "resume me"}};
  return state;
}

TEST(Checkpoint, RoundTripIsBitIdentical) {
  for (const std::string name : {"sgd", "adamw"}) {
    SCOPED_TRACE(name);
    TempDir dir;
    TrainingRun run("vit_tiny_test", name, {});
    for (int i = 0; i < 3; ++i) run.step();
    const CheckpointState state = sample_state();
    EXPECT_FALSE(checkpoint_exists(dir.path()));
    save_checkpoint(dir / "ckpt", run.layout, run.params.data(), *run.optimizer, state);
    EXPECT_TRUE(checkpoint_exists(dir / "ckpt"));
    EXPECT_TRUE(temporaries(dir / "ckpt").empty());

    TrainingRun fresh("vit_tiny_test", name, {});
    const CheckpointState loaded = load_checkpoint(dir / "ckpt", fresh.layout, fresh.params.data(), *fresh.optimizer);
    EXPECT_TRUE(same_bits(fresh.params, run.params));
    EXPECT_EQ(fresh.optimizer->step_count(), 3);
    for (const std::string& buffer : run.optimizer->state_names())
      EXPECT_TRUE(same_bits(fresh.optimizer->state(buffer), run.optimizer->state(buffer))) << buffer;
    EXPECT_EQ(loaded.step, 1234);
    EXPECT_EQ(loaded.data_position, state.data_position);
    EXPECT_EQ(loaded.extra, state.extra);

    // No RNG state is written (CheckpointState); the key stays, empty, for ddpx builds before this one.
    EXPECT_EQ(SafetensorsReader(checkpoint_file(dir / "ckpt")).metadata().at("rng_states"), "[]");

    const CheckpointInfo info = read_checkpoint_info(dir / "ckpt");
    EXPECT_EQ(info.model_spec, "vit_tiny_test");
    EXPECT_EQ(info.optimizer, name);
    EXPECT_EQ(info.optimizer_options, run.optimizer->options_json());
    EXPECT_EQ(info.optimizer_step, 3);
  }
}

TEST(Checkpoint, FileIsATorchvisionStateDictPlusOptimizerTensors) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "adamw", {});
  run.step();
  save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, {});
  const SafetensorsReader reader(checkpoint_file(dir.path()));
  EXPECT_EQ(reader.entries().size(), 3 * run.layout.tensors().size());
  EXPECT_NE(reader.find("encoder.layers.encoder_layer_0.mlp.0.weight"), nullptr);
  EXPECT_NE(reader.find("optimizer.exp_avg.class_token"), nullptr);
  EXPECT_NE(reader.find("optimizer.exp_avg_sq.conv_proj.bias"), nullptr);
  EXPECT_EQ(reader.metadata().at("step"), "0");
  EXPECT_EQ(reader.metadata().at("optimizer"), "adamw");
  EXPECT_EQ(reader.metadata().at("optimizer_state"), R"(["exp_avg","exp_avg_sq"])");
}

TEST(Checkpoint, OtherBuffersRoundTripUnderTheirNames) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "sgd", {});
  run.step();
  CheckpointState state;
  state.step = 1;
  std::vector<float> average(run.layout.buffer_size(), 0.f);
  for (const TensorSlot& slot : run.layout.tensors())  // the padding between tensors stays zero, as in training
    for (size_t i = slot.offset; i < slot.offset + slot.numel; ++i)
      average[i] = static_cast<float>(i % 97) * 0.125f - 3.f;
  state.buffers = {{"ema", average}};
  save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, state);
  const SafetensorsReader reader(checkpoint_file(dir.path()));
  EXPECT_EQ(reader.entries().size(), 3 * run.layout.tensors().size());
  EXPECT_NE(reader.find("ema.class_token"), nullptr);
  EXPECT_EQ(reader.metadata().at("buffers"), R"(["ema"])");
  TrainingRun fresh("vit_tiny_test", "sgd", {});
  const CheckpointState loaded = load_checkpoint(dir.path(), fresh.layout, fresh.params.data(), *fresh.optimizer);
  ASSERT_EQ(loaded.buffers.size(), 1u);
  EXPECT_EQ(loaded.buffers[0].first, "ema");
  EXPECT_TRUE(same_bits(loaded.buffers[0].second, average));
  EXPECT_TRUE(same_bits(fresh.params, run.params));
  // A file without the key holds no other buffers.
  save_checkpoint(dir / "plain", run.layout, run.params.data(), *run.optimizer, {});
  EXPECT_TRUE(load_checkpoint(dir / "plain", fresh.layout, fresh.params.data(), *fresh.optimizer).buffers.empty());
}

TEST(Checkpoint, ResumeMatchesTheUninterruptedRunBitForBit) {
  for (const std::string name : {"sgd", "adamw"}) {
    SCOPED_TRACE(name);
    TempDir dir;
    const std::map<std::string, double> flags{{"--lr", 0.05}, {"--weight-decay", 0.01}};
    TrainingRun straight("vit_tiny_test", name, flags);
    for (int i = 0; i < 5; ++i) straight.step();

    TrainingRun first("vit_tiny_test", name, flags);
    for (int i = 0; i < 2; ++i) first.step();
    save_checkpoint(dir.path(), first.layout, first.params.data(), *first.optimizer, {});

    TrainingRun resumed("vit_tiny_test", name, flags);
    (void)load_checkpoint(dir.path(), resumed.layout, resumed.params.data(), *resumed.optimizer);
    resumed.grad_rng.restore(first.grad_rng.save());  // the test's gradient stream continues where it stopped
    for (int i = 0; i < 3; ++i) resumed.step();
    EXPECT_TRUE(same_bits(resumed.params, straight.params));
    for (const std::string& buffer : straight.optimizer->state_names())
      EXPECT_TRUE(same_bits(resumed.optimizer->state(buffer), straight.optimizer->state(buffer))) << buffer;
  }
}

TEST(Checkpoint, MismatchesNameBothValuesAndTheFlag) {
  TempDir dir;
  TrainingRun saved("vit_tiny_test", "sgd", {});
  save_checkpoint(dir.path(), saved.layout, saved.params.data(), *saved.optimizer, {});

  TrainingRun other_model("vit_tiny_test:layers=3", "sgd", {});
  expect_error([&] { load_checkpoint(dir.path(), other_model.layout, other_model.params.data(), *other_model.optimizer); },
               {"checkpoint.safetensors", "--model vit_tiny_test", "--model custom:", "layers=3"});
  TrainingRun other_optimizer("vit_tiny_test", "adamw", {});
  expect_error(
      [&] { load_checkpoint(dir.path(), other_optimizer.layout, other_optimizer.params.data(), *other_optimizer.optimizer); },
      {"checkpoint.safetensors", "--optimizer sgd", "--optimizer adamw"});
  TrainingRun no_momentum("vit_tiny_test", "sgd", {{"--momentum", 0.0}});
  expect_error([&] { load_checkpoint(dir.path(), no_momentum.layout, no_momentum.params.data(), *no_momentum.optimizer); },
               {"checkpoint.safetensors", "[momentum]", "[]", "--momentum"});
  // Options such as --lr may change on resume.
  TrainingRun new_lr("vit_tiny_test", "sgd", {{"--lr", 0.5}});
  EXPECT_NO_THROW(load_checkpoint(dir.path(), new_lr.layout, new_lr.params.data(), *new_lr.optimizer));
  EXPECT_EQ(new_lr.optimizer->spec().lr, 0.5f);

  auto wrong_size = std::make_unique<Optimizer>(saved.optimizer->spec(), 10);
  expect_error([&] { save_checkpoint(dir / "x", saved.layout, saved.params.data(), *wrong_size, {}); },
               {"10 elements", "--model vit_tiny_test"});
}

TEST(Checkpoint, RefusesFilesThatAreNotDdpxCheckpoints) {
  TempDir dir;
  expect_error([&] { read_checkpoint_info(dir.path()); }, {"checkpoint.safetensors", "No such file"});
  const float value = 1.f;
  const std::vector<TensorView> plain = {{"w", TensorDType::f32, {1}, &value}};
  write_safetensors(checkpoint_file(dir.path()), plain, {{"format", "pt"}});
  expect_error([&] { read_checkpoint_info(dir.path()); }, {"checkpoint.safetensors", "lacks metadata"});

  TensorMetadata metadata = {{"ddpx_checkpoint_version", "1"}, {"model", "vit_tiny_test"}, {"optimizer", "sgd"},
                             {"optimizer_options", "{}"}, {"optimizer_state", "[\"momentum\"]"},
                             {"optimizer_step", "2"}, {"step", "2x"}, {"rng_states", "[]"},
                             {"data_position", "null"}, {"extra", "null"}};
  write_safetensors(checkpoint_file(dir.path()), plain, metadata);
  expect_error([&] { read_checkpoint_info(dir.path()); }, {"checkpoint.safetensors", "step", "'2x'"});
  metadata["step"] = "-5";  // a resumed run would count up from -5 (it hung in the loop)
  write_safetensors(checkpoint_file(dir.path()), plain, metadata);
  expect_error([&] { read_checkpoint_info(dir.path()); }, {"checkpoint.safetensors", "'step'", "negative", "-5"});
  metadata["step"] = "2";
  metadata["optimizer_step"] = "-1";
  write_safetensors(checkpoint_file(dir.path()), plain, metadata);
  expect_error([&] { read_checkpoint_info(dir.path()); }, {"checkpoint.safetensors", "'optimizer_step'", "-1"});
  metadata["optimizer_step"] = "2";
  metadata["rng_states"] = R"([{"state": 5}])";
  write_safetensors(checkpoint_file(dir.path()), plain, metadata);
  expect_error([&] { read_checkpoint_info(dir.path()); }, {"checkpoint.safetensors", "rng_states[0]"});
  metadata["rng_states"] = "[";
  write_safetensors(checkpoint_file(dir.path()), plain, metadata);
  expect_error([&] { read_checkpoint_info(dir.path()); }, {"checkpoint.safetensors", "'rng_states'", "JSON"});
  // RNG states as files before 2026-12-05 could hold them load (unused), and so does a file without the key.
  metadata["rng_states"] = R"([{"state": "5", "inc": "7", "spare_bits": "0", "has_spare": false}])";
  write_safetensors(checkpoint_file(dir.path()), plain, metadata);
  EXPECT_EQ(read_checkpoint_info(dir.path()).state.step, 2);
  metadata.erase("rng_states");
  write_safetensors(checkpoint_file(dir.path()), plain, metadata);
  EXPECT_EQ(read_checkpoint_info(dir.path()).state.step, 2);
  // optimizer_state and buffers: JSON arrays of names, read and refused alike.
  EXPECT_EQ(read_checkpoint_info(dir.path()).optimizer_state, std::vector<std::string>{"momentum"});
  metadata["buffers"] = R"(["ema"])";
  write_safetensors(checkpoint_file(dir.path()), plain, metadata);
  const CheckpointInfo with_buffers = read_checkpoint_info(dir.path());
  ASSERT_EQ(with_buffers.state.buffers.size(), 1u);
  EXPECT_EQ(with_buffers.state.buffers[0].first, "ema");
  for (const std::string key : {"optimizer_state", "buffers"}) {
    const std::string good = metadata[key];
    metadata[key] = R"({"momentum": 1})";
    write_safetensors(checkpoint_file(dir.path()), plain, metadata);
    expect_error([&] { read_checkpoint_info(dir.path()); }, {"checkpoint.safetensors", "'" + key + "'", "JSON array"});
    metadata[key] = R"(["momentum", 2])";
    write_safetensors(checkpoint_file(dir.path()), plain, metadata);
    expect_error([&] { read_checkpoint_info(dir.path()); }, {"checkpoint.safetensors", "'" + key + "'", "strings"});
    metadata[key] = good;
  }
  metadata["rng_states"] = "[]";
  metadata["ddpx_checkpoint_version"] = "9";
  write_safetensors(checkpoint_file(dir.path()), plain, metadata);
  expect_error([&] { read_checkpoint_info(dir.path()); }, {"checkpoint.safetensors", "version 9"});
}

// The fuzz corpus's checkpoints were written by a build that stored two RNG states in each: they still load, with
// their model, optimizer state and step.
TEST(Checkpoint, FilesHoldingRngStatesFromEarlierBuildsLoad) {
  const VitLayout layout(parse_vit_spec("custom:image=4,patch=2,channels=1,layers=1,hidden=4,heads=1,mlp=4,classes=2"));
  for (const std::string name : {"sgd", "adamw"}) {
    SCOPED_TRACE(name);
    const std::filesystem::path file =
        std::filesystem::path(DDPX_SOURCE_DIR) / "tests/fuzz/corpus/checkpoint" / (name + ".safetensors");
    ASSERT_NE(SafetensorsReader(file).metadata().at("rng_states"), "[]");
    OptimizerSpec spec;
    spec.kind = name == "sgd" ? OptimizerKind::sgd : OptimizerKind::adamw;
    spec.momentum = name == "sgd" ? 0.9f : 0.f;
    Optimizer optimizer(spec, layout.buffer_size());
    std::vector<float> params(layout.buffer_size(), 0.f);
    const CheckpointState loaded = load_checkpoint(file, layout, params.data(), optimizer);
    EXPECT_EQ(loaded.step, 2);
    EXPECT_EQ(optimizer.step_count(), 2);
    EXPECT_EQ(loaded.extra["data"], "synthetic");
  }
}

TEST(Checkpoint, CrashDuringSaveLeavesThePreviousCheckpoint) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "adamw", {});
  run.step();
  const std::vector<float> saved_params = run.params;
  CheckpointState first;
  first.step = 1;
  save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, first);

  // A process killed mid-write leaves a partial temporary file behind: the checkpoint is unaffected.
  const std::string complete = testing::read_bytes(checkpoint_file(dir.path()));
  testing::write_bytes(own_temporary(dir.path()), complete.substr(0, complete.size() / 2));
  TrainingRun reader("vit_tiny_test", "adamw", {});
  EXPECT_EQ(load_checkpoint(dir.path(), reader.layout, reader.params.data(), *reader.optimizer).step, 1);
  EXPECT_TRUE(same_bits(reader.params, saved_params));

  // The next save replaces the leftover and succeeds.
  run.step();
  CheckpointState second;
  second.step = 2;
  save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, second);
  EXPECT_TRUE(temporaries(dir.path()).empty());
  EXPECT_EQ(read_checkpoint_info(dir.path()).state.step, 2);
}

TEST(Checkpoint, FailingWriteThrowsAndLeavesThePreviousCheckpoint) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "sgd", {});
  run.step();
  const std::vector<float> saved_params = run.params;
  CheckpointState first;
  first.step = 1;
  save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, first);
  run.step();

  // Inject a real write failure: cap the size of files this process may write (the kernel then fails write()
  // with EFBIG once the temporary file reaches 4 KiB; SIGXFSZ is ignored so the failure is reported, not fatal).
  rlimit original{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &original), 0);
  const auto previous_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit capped = original;
  capped.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &capped), 0);
  CheckpointState second;
  second.step = 2;
  std::string message;
  try {
    save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, second);
  } catch (const Error& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &original);
  signal(SIGXFSZ, previous_handler);

  EXPECT_NE(message.find("unchanged"), std::string::npos) << message;
  EXPECT_NE(message.find(".checkpoint.safetensors"), std::string::npos) << message;
  EXPECT_TRUE(temporaries(dir.path()).empty());
  TrainingRun reader("vit_tiny_test", "sgd", {});
  EXPECT_EQ(load_checkpoint(dir.path(), reader.layout, reader.params.data(), *reader.optimizer).step, 1);
  EXPECT_TRUE(same_bits(reader.params, saved_params));
}

// One flipped bit anywhere in the data section is caught on load, naming the file and the tensor (before, it was
// resumed without a word and the run ended with different weights).
TEST(Checkpoint, AFlippedBitInTheDataIsRefusedNamingTheTensor) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "adamw", {});
  run.step();
  save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, {});
  const std::string bytes = testing::read_bytes(checkpoint_file(dir.path()));
  const SafetensorsReader reader(checkpoint_file(dir.path()));
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  for (const char* name : {"heads.head.weight", "optimizer.exp_avg_sq.conv_proj.weight"}) {
    SCOPED_TRACE(name);
    const SafetensorsEntry& entry = reader.at(name);
    std::string damaged = bytes;
    damaged[8 + header + entry.data_begin + entry.nbytes() / 2] ^= 0x10;
    std::filesystem::create_directories(dir / "bad");
    testing::write_bytes(dir / "bad/checkpoint.safetensors", damaged);
    TrainingRun fresh("vit_tiny_test", "adamw", {});
    expect_error([&] { load_checkpoint(dir / "bad", fresh.layout, fresh.params.data(), *fresh.optimizer); },
                 {"bad/checkpoint.safetensors", std::string("tensor '") + name + "'", "checksum"});
  }
}

// A diverged state is never written: the previous checkpoint stays, and the error names the tensor.
TEST(Checkpoint, NonFiniteStateIsNotWrittenAndThePreviousOneStays) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "sgd", {{"--momentum", 0.9}});
  run.step();
  CheckpointState first;
  first.step = 1;
  save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, first);
  const std::string good = testing::read_bytes(checkpoint_file(dir.path()));
  run.params[run.layout.at("encoder.ln.weight").offset + 3] = std::numeric_limits<float>::quiet_NaN();
  CheckpointState second;
  second.step = 2;
  expect_error([&] { save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, second); },
               {"refusing to write", "encoder.ln.weight", "element 3", "step 2"});
  run.params[run.layout.at("encoder.ln.weight").offset + 3] = 1.f;
  run.optimizer->state("momentum")[run.layout.at("class_token").offset] = std::numeric_limits<float>::infinity();
  expect_error([&] { save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, second); },
               {"optimizer.momentum.class_token", "inf"});
  EXPECT_EQ(testing::read_bytes(checkpoint_file(dir.path())), good);
  EXPECT_TRUE(temporaries(dir.path()).empty());
}

// --keep-checkpoints K: the newest K stay as checkpoint-<step>.safetensors, checkpoint.safetensors is the newest
// (a hard link, no second write), and each kept one loads on its own.
TEST(Checkpoint, KeepsTheNewestKAndLeavesLaterStepsAlone) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "sgd", {});
  for (int64_t step = 1; step <= 4; ++step) {
    run.step();
    CheckpointState state;
    state.step = step * 10;
    save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, state, 2);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "checkpoint-10.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir / "checkpoint-20.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(dir / "checkpoint-30.safetensors"));
  EXPECT_TRUE(std::filesystem::equivalent(dir / "checkpoint-40.safetensors", checkpoint_file(dir.path())));
  EXPECT_EQ(read_checkpoint_info(dir.path()).state.step, 40);
  EXPECT_EQ(read_checkpoint_info(dir / "checkpoint-30.safetensors").state.step, 30);
  // A run resumed from step 30 that checkpoints step 35 keeps 30 and 35 and never removes the later 40.
  CheckpointState resumed;
  resumed.step = 35;
  save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, resumed, 2);
  EXPECT_TRUE(std::filesystem::exists(dir / "checkpoint-30.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(dir / "checkpoint-40.safetensors"));
  EXPECT_EQ(read_checkpoint_info(dir.path()).state.step, 35);
  EXPECT_TRUE(temporaries(dir.path()).empty());
}

// Issue 37 item 3: the tensors were checksummed but not the metadata, so a flipped bit in "step" (40 -> 41, 48 or
// 00) or in an RNG state was resumed without a word. The header checksum covers all of it now.
TEST(Checkpoint, AFlippedBitInTheMetadataIsRefused) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "sgd", {});
  run.step();
  CheckpointState state = sample_state();
  state.step = 40;
  save_checkpoint(dir.path(), run.layout, run.params.data(), *run.optimizer, state);
  const std::string bytes = testing::read_bytes(checkpoint_file(dir.path()));
  std::filesystem::create_directories(dir / "bad");
  const size_t step_at = bytes.find("\"step\":\"40\"");
  ASSERT_NE(step_at, std::string::npos);
  for (const auto& [offset, mask] : std::vector<std::pair<size_t, char>>{
           {step_at + 9, 0x01},  // "40" -> "41"
           {step_at + 9, 0x08},  // "40" -> "48"
           {step_at + 8, 0x04},  // "40" -> "00"
           {bytes.find("4096}") + 3, 0x01},  // data_position's index 4096 -> 4097
           {bytes.find("\"ddpx_checkpoint_version\":\"3\"") + 27, 0x01}}) {  // "3" -> "2"
    SCOPED_TRACE(offset);
    std::string damaged = bytes;
    damaged[offset] ^= mask;
    testing::write_bytes(dir / "bad/checkpoint.safetensors", damaged);
    TrainingRun fresh("vit_tiny_test", "sgd", {});
    expect_error([&] { load_checkpoint(dir / "bad", fresh.layout, fresh.params.data(), *fresh.optimizer); },
                 {"bad/checkpoint.safetensors", "header", "checksum"});
    expect_error([&] { read_checkpoint_info(dir / "bad"); }, {"bad/checkpoint.safetensors", "checksum"});
  }
  TrainingRun fresh("vit_tiny_test", "sgd", {});
  EXPECT_EQ(load_checkpoint(dir.path(), fresh.layout, fresh.params.data(), *fresh.optimizer).step, 40);
}

// Issue 37 item 4: checkpoint-5.safetensors or checkpoint.safetensors made a symlink to a file outside the folder was
// followed, and the checkpoint written over that file. The link is replaced now; the file it named is untouched.
TEST(Checkpoint, APlantedSymlinkIsReplacedNotFollowed) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "sgd", {});
  const std::filesystem::path victim = dir / "victim.txt";
  testing::write_bytes(victim, "the training user's file");
  std::filesystem::create_directories(dir / "ckpt");
  for (const auto& [name, keep] : std::vector<std::pair<std::string, int>>{{"checkpoint.safetensors", 1},
                                                                           {"checkpoint-5.safetensors", 3},
                                                                           {"checkpoint.safetensors", 3}}) {
    SCOPED_TRACE(name + " keep " + std::to_string(keep));
    std::filesystem::remove(dir / "ckpt" / name);
    std::filesystem::create_symlink(victim, dir / "ckpt" / name);
    CheckpointState state;
    state.step = 5;
    save_checkpoint(dir / "ckpt", run.layout, run.params.data(), *run.optimizer, state, keep);
    EXPECT_EQ(testing::read_bytes(victim), "the training user's file");
    EXPECT_FALSE(std::filesystem::is_symlink(dir / "ckpt" / name));
    EXPECT_EQ(read_checkpoint_info(dir / "ckpt" / name).state.step, 5);
    EXPECT_TRUE(temporaries(dir / "ckpt").empty());
  }
}

// Issue 37 item 4: a folder every user can write is refused (another user could plant links or replace files)
// unless it is sticky and owned by this user; the error names the flag, the folder and its mode.
TEST(Checkpoint, AFolderOthersCanWriteIsRefusedUnlessStickyAndOwn) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "sgd", {});
  std::filesystem::create_directories(dir / "shared");
  ASSERT_EQ(::chmod((dir / "shared").c_str(), 0777), 0);
  expect_error([&] { save_checkpoint(dir / "shared", run.layout, run.params.data(), *run.optimizer, {}); },
               {"--checkpoint-dir", "shared", "writable by every user", "0777"});
  expect_error([&] { require_checkpoint_folder(dir / "shared", "--checkpoint-dir"); }, {"0777", "chmod o-w"});
  EXPECT_FALSE(std::filesystem::exists(dir / "shared/checkpoint.safetensors"));
  ASSERT_EQ(::chmod((dir / "shared").c_str(), 01777), 0);  // sticky and ours: allowed
  save_checkpoint(dir / "shared", run.layout, run.params.data(), *run.optimizer, {});
  EXPECT_TRUE(checkpoint_exists(dir / "shared"));
}

// Issue 37 item 5: a checkpoint prepared but not committed (the next step's loss failed its check) leaves the
// folder as it was: the last good checkpoint stays, and nothing of the new one remains.
TEST(Checkpoint, AnUncommittedCheckpointLeavesTheLastGoodOne) {
  TempDir dir;
  TrainingRun run("vit_tiny_test", "sgd", {});
  for (int keep : {1, 2}) {
    SCOPED_TRACE(keep);
    const std::filesystem::path folder = dir / ("keep" + std::to_string(keep));
    CheckpointState good;
    good.step = 1;
    save_checkpoint(folder, run.layout, run.params.data(), *run.optimizer, good, keep);
    const std::string good_bytes = testing::read_bytes(checkpoint_file(folder));
    run.step();
    CheckpointState next;
    next.step = 2;
    {
      PendingCheckpoint pending = prepare_checkpoint(folder, run.layout, run.params.data(), *run.optimizer, next, keep);
      EXPECT_EQ(pending.target(), folder / (keep == 1 ? "checkpoint.safetensors" : "checkpoint-2.safetensors"));
      EXPECT_EQ(testing::read_bytes(checkpoint_file(folder)), good_bytes);
    }  // dropped uncommitted
    EXPECT_EQ(testing::read_bytes(checkpoint_file(folder)), good_bytes);
    EXPECT_FALSE(std::filesystem::exists(folder / "checkpoint-2.safetensors"));
    EXPECT_TRUE(temporaries(folder).empty());
    PendingCheckpoint committed = prepare_checkpoint(folder, run.layout, run.params.data(), *run.optimizer, next, keep);
    committed.commit();
    EXPECT_EQ(read_checkpoint_info(folder).state.step, 2);
  }
}

}  // namespace
}  // namespace ddpx
