// Atomic training checkpoints (see checkpoint.hpp for the file layout and the guarantees).
#include "io/checkpoint.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "core/error.hpp"
#include "core/json_parse.hpp"
#include "core/internal_assert.hpp"
#include "core/test_fault.hpp"
#include "io/checkpoint_folder.hpp"
#include "io/param_safetensors.hpp"
#include "io/output_file.hpp"
#include "io/posix_file.hpp"
#include "io/safetensors.hpp"
#include "io/tensor_integrity.hpp"

namespace ddpx {

namespace {

// Version 2 added the per-tensor checksums (required), version 3 the header checksum (required): the metadata
// (step, RNG states, data position, ...) is covered too. Versions 1 and 2 still load, less verified.
constexpr std::string_view kVersion = "3";
constexpr std::string_view kFlag = "--checkpoint-dir";

std::string state_prefix(std::string_view state_name) { return fmt::format("optimizer.{}.", state_name); }

// Reads checkpoint metadata with errors that name the file and the key.
class MetadataReader {
 public:
  MetadataReader(const TensorMetadata& metadata, const std::filesystem::path& path)
      : metadata_(metadata), path_(path) {}

  const std::string& text(const std::string& key) const {
    const auto it = metadata_.find(key);
    DDPX_REQUIRE(it != metadata_.end(), "checkpoint '{}' lacks metadata '{}'; it was not written by ddpx or is damaged",
                 path_.string(), key);
    return it->second;
  }
  template <typename Integer>
  Integer integer(std::string_view context, const std::string& digits) const {
    Integer value{};
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    DDPX_REQUIRE(error == std::errc{} && end == digits.data() + digits.size(),
                 "checkpoint '{}': {} must be a decimal integer, got '{}'", path_.string(), context, digits);
    return value;
  }
  int64_t integer(const std::string& key) const { return integer<int64_t>(key, text(key)); }
  int64_t count(const std::string& key) const {
    const int64_t value = integer(key);
    DDPX_REQUIRE(value >= 0, "checkpoint '{}': metadata '{}' must not be negative, got {}; the file is damaged",
                 path_.string(), key, value);
    return value;
  }
  nlohmann::json json(const std::string& key) const {
    try {
      return parse_json(text(key), "checkpoint '" + path_.string() + "' metadata '" + key + "'");
    } catch (const nlohmann::json::exception& e) {
      fail("checkpoint '{}': metadata '{}' is not valid JSON ({})", path_.string(), key, e.what());
    }
  }
  // Metadata `key` as a JSON array of strings (tensor or state names), in its order.
  std::vector<std::string> strings(const std::string& key) const {
    const nlohmann::json list = json(key);
    DDPX_REQUIRE(list.is_array(), "checkpoint '{}': metadata '{}' must be a JSON array, got {}", path_.string(), key,
                 list.dump());
    std::vector<std::string> names;
    for (const auto& name : list) {
      DDPX_REQUIRE(name.is_string(), "checkpoint '{}': metadata '{}' must hold strings, got {}", path_.string(), key,
                   list.dump());
      names.push_back(name.get<std::string>());
    }
    return names;
  }
  // An RNG state as ddpx's first checkpoints described one: {"state", "inc", "spare_bits" as decimal u64 strings,
  // "has_spare"}.
  void require_rng(const nlohmann::json& item, size_t index) const {
    const std::string context = fmt::format("rng_states[{}]", index);
    DDPX_REQUIRE(item.is_object() && item.contains("state") && item.contains("inc") && item.contains("spare_bits") &&
                     item.contains("has_spare") && item["state"].is_string() && item["inc"].is_string() &&
                     item["spare_bits"].is_string() && item["has_spare"].is_boolean(),
                 "checkpoint '{}': {} must be {{\"state\", \"inc\", \"spare_bits\": decimal strings, \"has_spare\": "
                 "bool}}, got {}",
                 path_.string(), context, item.dump());
    for (const char* key : {"state", "inc", "spare_bits"})
      (void)integer<uint64_t>(context + "." + key, item[key].get<std::string>());
  }

 private:
  const TensorMetadata& metadata_;
  const std::filesystem::path& path_;
};

CheckpointInfo parse_info(const SafetensorsReader& reader) {
  const MetadataReader metadata(reader.metadata(), reader.path());
  // Before any value is believed: a file that carries a header checksum is verified whatever its version says (a
  // flipped bit could make a version 3 file claim version 2).
  const bool header_verified = verify_header_checksum(reader);
  const std::string& version = metadata.text("ddpx_checkpoint_version");
  DDPX_REQUIRE(version == kVersion || version == "2" || version == "1",
               "checkpoint '{}' has format version {}; this ddpx reads versions 1 to {}", reader.path().string(),
               version, kVersion);
  DDPX_REQUIRE(version != kVersion || header_verified,
               "checkpoint '{}' lacks metadata '{}' (its header's checksum); the file is damaged or was edited",
               reader.path().string(), kHeaderChecksumKey);
  DDPX_REQUIRE(version == "1" || reader.metadata().contains(kChecksumKey),
               "checkpoint '{}' lacks metadata '{}' (its tensors' checksums); the file is damaged or was edited",
               reader.path().string(), kChecksumKey);
  CheckpointInfo info;
  info.model_spec = metadata.text("model");
  info.optimizer = metadata.text("optimizer");
  info.optimizer_options = metadata.json("optimizer_options");
  info.optimizer_state = metadata.strings("optimizer_state");
  info.optimizer_step = metadata.count("optimizer_step");
  info.state.step = metadata.count("step");
  // Files before this build may hold RNG states (none that ddpx wrote did): checked as before, then not needed.
  if (reader.metadata().contains("rng_states")) {
    const nlohmann::json rng_states = metadata.json("rng_states");
    DDPX_REQUIRE(rng_states.is_array(), "checkpoint '{}': metadata 'rng_states' must be a JSON array, got {}",
                 reader.path().string(), rng_states.dump());
    for (size_t i = 0; i < rng_states.size(); ++i) metadata.require_rng(rng_states[i], i);
  }
  info.state.data_position = metadata.json("data_position");
  info.state.extra = metadata.json("extra");
  if (reader.metadata().contains("buffers"))
    for (std::string& name : metadata.strings("buffers")) info.state.buffers.push_back({std::move(name), {}});
  return info;
}

void require_optimizer_size(const FlatLayout& layout, const Optimizer& optimizer) {
  DDPX_REQUIRE(optimizer.num_elements() == layout.buffer_size(),
               "the {} optimizer holds state for {} elements but --model {} has a parameter buffer of {}",
               optimizer.name(), optimizer.num_elements(), layout.spec(), layout.buffer_size());
}

std::string numbered_name(int64_t step) { return fmt::format("checkpoint-{}.safetensors", step); }
constexpr const char* kLatestName = "checkpoint.safetensors";

// The steps of the checkpoint-<step>.safetensors files in the folder, ascending.
std::vector<int64_t> numbered_steps(const CheckpointFolder& folder) {
  std::vector<int64_t> steps;
  for (const std::string& name : folder.names()) {
    constexpr std::string_view prefix = "checkpoint-", suffix = ".safetensors";
    if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix))
      continue;
    const std::string_view digits(name.data() + prefix.size(), name.size() - prefix.size() - suffix.size());
    int64_t step = 0;
    const auto [end, parse_error] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (parse_error == std::errc{} && end == digits.data() + digits.size() && digits[0] != '-' &&
        numbered_name(step) == name)
      steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace

std::filesystem::path checkpoint_file(const std::filesystem::path& dir) {
  if (std::filesystem::is_regular_file(dir)) return dir;  // --resume D/checkpoint-<step>.safetensors
  return dir / "checkpoint.safetensors";
}

bool checkpoint_exists(const std::filesystem::path& dir) { return std::filesystem::is_regular_file(checkpoint_file(dir)); }

PendingCheckpoint::PendingCheckpoint(std::unique_ptr<CheckpointFolder> folder, CheckpointFolder::NewFile file,
                                     int64_t step, int keep)
    : folder_(std::move(folder)), file_(std::move(file)), step_(step), keep_(keep) {}
PendingCheckpoint::PendingCheckpoint(PendingCheckpoint&&) noexcept = default;
PendingCheckpoint& PendingCheckpoint::operator=(PendingCheckpoint&& other) noexcept {
  discard();
  file_ = std::move(other.file_);
  folder_ = std::move(other.folder_);
  step_ = other.step_;
  keep_ = other.keep_;
  return *this;
}
PendingCheckpoint::~PendingCheckpoint() { discard(); }

void PendingCheckpoint::discard() noexcept {
  file_.reset();  // before its folder
  folder_.reset();
}

std::filesystem::path PendingCheckpoint::target() const {
  DDPX_INTERNAL_ASSERT(folder_, "PendingCheckpoint::target() after commit or discard");
  return folder_->path() / (keep_ == 1 ? kLatestName : numbered_name(step_));
}

void PendingCheckpoint::commit() {
  DDPX_INTERNAL_ASSERT(folder_ && file_, "PendingCheckpoint::commit() twice");
  CheckpointFolder& folder = *folder_;
  const std::string name = keep_ == 1 ? kLatestName : numbered_name(step_);
  try {
    file_->place(name);
    file_.reset();
    if (keep_ > 1) folder.link_or_copy(name, kLatestName);
  } catch (const std::exception& e) {
    fail("saving checkpoint '{}' failed; the previous checkpoint there (if any) is unchanged: {}",
         (folder.path() / name).string(), e.what());
  }
  if (keep_ > 1) {
    // Keep this one and the newest keep - 1 before it; never touch later steps (a run resumed from an earlier
    // checkpoint leaves the first run's later ones alone).
    std::vector<int64_t> older;
    for (const int64_t step : numbered_steps(folder))
      if (step < step_) older.push_back(step);
    const size_t keep_older = static_cast<size_t>(keep_ - 1);
    for (size_t i = 0; i + keep_older < older.size(); ++i) folder.remove(numbered_name(older[i]));
  }
  discard();
}

PendingCheckpoint prepare_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout, const float* params,
                                     const Optimizer& optimizer, const CheckpointState& state, int keep) {
  DDPX_REQUIRE(keep >= 1, "--keep-checkpoints must be >= 1, got {}", keep);
  require_optimizer_size(layout, optimizer);
  nlohmann::json buffer_names = nlohmann::json::array();
  for (const auto& [name, values] : state.buffers) {
    DDPX_INTERNAL_ASSERT(!name.empty() && name.find('.') == std::string::npos && name != "optimizer",
                         "checkpoint buffer name '{}'", name);
    DDPX_INTERNAL_ASSERT(values.size() == layout.buffer_size(), "checkpoint buffer '{}' has {} elements, not {}",
                         name, values.size(), layout.buffer_size());
    buffer_names.push_back(name);
  }
  TensorMetadata metadata = {
      {"format", "pt"},
      {"ddpx_checkpoint_version", std::string(kVersion)},
      {"model", layout.spec()},
      {"optimizer", std::string(optimizer.name())},
      {"optimizer_options", optimizer.options_json().dump()},
      {"optimizer_state", nlohmann::json(optimizer.state_names()).dump()},
      {"optimizer_step", std::to_string(optimizer.step_count())},
      {"step", std::to_string(state.step)},
      {"rng_states", "[]"},  // for ddpx builds before this one, which require the key
      {"data_position", state.data_position.dump()},
      {"extra", state.extra.dump()},
  };
  if (!state.buffers.empty()) metadata["buffers"] = buffer_names.dump();
  std::vector<TensorView> views = layout_tensor_views(layout, "", params);
  for (const std::string& name : optimizer.state_names()) {
    std::vector<TensorView> state_views = layout_tensor_views(layout, state_prefix(name), optimizer.state(name).data());
    views.insert(views.end(), state_views.begin(), state_views.end());
  }
  for (const auto& [buffer, values] : state.buffers) {
    std::vector<TensorView> buffer_views = layout_tensor_views(layout, buffer + ".", values.data());
    views.insert(views.end(), buffer_views.begin(), buffer_views.end());
  }
  const std::string name = keep == 1 ? kLatestName : numbered_name(state.step);
  const std::filesystem::path target = dir / name;
  require_finite_tensors(views, fmt::format("checkpoint '{}' (step {})", target.string(), state.step));
  metadata = with_checksums(views, metadata);
  try {
    auto folder = std::make_unique<CheckpointFolder>(dir, kFlag);
    CheckpointFolder::NewFile file = folder->write_new(name, [&](OutputFile& output) {
      write_safetensors(output, views, metadata);
      test_fault_point("write-" + name);  // a test hook: see core/test_fault.hpp
    });
    return PendingCheckpoint(std::move(folder), std::move(file), state.step, keep);
  } catch (const std::exception& e) {
    fail("saving checkpoint '{}' failed; the previous checkpoint there (if any) is unchanged: {}", target.string(),
         e.what());
  }
}

void save_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout, const float* params,
                     const Optimizer& optimizer, const CheckpointState& state, int keep) {
  prepare_checkpoint(dir, layout, params, optimizer, state, keep).commit();
}

CheckpointInfo read_checkpoint_info(const std::filesystem::path& dir) {
  return parse_info(SafetensorsReader(checkpoint_file(dir)));
}

CheckpointState load_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout, float* params,
                                Optimizer& optimizer) {
  const SafetensorsReader reader(checkpoint_file(dir));
  const std::string where = reader.path().string();
  CheckpointInfo info = parse_info(reader);
  const std::string model = layout.spec();
  DDPX_REQUIRE(info.model_spec == model,
               "checkpoint '{}' was saved with --model {} but this run has --model {}; resume with --model {} or "
               "use another checkpoint directory",
               where, info.model_spec, model, info.model_spec);
  DDPX_REQUIRE(info.optimizer == optimizer.name(),
               "checkpoint '{}' was saved with --optimizer {} but this run has --optimizer {}; resume with "
               "--optimizer {} or use another checkpoint directory",
               where, info.optimizer, optimizer.name(), info.optimizer);
  DDPX_REQUIRE(info.optimizer_state == optimizer.state_names(),
               "checkpoint '{}' holds {} optimizer state [{}] (options {}) but this run's {} keeps [{}] (options {}); "
               "resume with the checkpoint's optimizer flags (e.g. --momentum)",
               where, info.optimizer, fmt::join(info.optimizer_state, ", "), info.optimizer_options.dump(),
               optimizer.name(), fmt::join(optimizer.state_names(), ", "), optimizer.options_json().dump());
  require_optimizer_size(layout, optimizer);
  std::vector<LayoutBufferTarget> targets = {{"", params}};
  for (const std::string& name : optimizer.state_names())
    targets.push_back({state_prefix(name), optimizer.state(name).data()});
  for (auto& [name, values] : info.state.buffers) {
    DDPX_REQUIRE(!name.empty() && name.find('.') == std::string::npos && name != "optimizer",
                 "checkpoint '{}': metadata 'buffers' names '{}', which is not a buffer name; the file is damaged",
                 where, name);
    values.assign(layout.buffer_size(), 0.f);
    targets.push_back({name + ".", values.data()});
  }
  read_layout_buffers(reader, layout, targets, LoadDTypes::f32_only,
                      fmt::format("The checkpoint does not fit --model {}; resume with the model it was saved for or "
                                  "use another checkpoint directory.",
                                  model));
  optimizer.set_step_count(info.optimizer_step);
  return std::move(info.state);
}

}  // namespace ddpx
