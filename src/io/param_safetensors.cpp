// Layout-aware parameter files (see param_safetensors.hpp for the guarantees).
#include "io/param_safetensors.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "core/json_parse.hpp"
#include "io/output_file.hpp"
#include "model/classifier_head.hpp"
#include "io/tensor_integrity.hpp"

namespace ddpx {

namespace {

constexpr size_t kMaxListedProblems = 8;

bool dtype_allowed(TensorDType dtype, LoadDTypes dtypes) {
  if (dtypes == LoadDTypes::f32_only) return dtype == TensorDType::f32;
  return is_floating(dtype);
}

struct PlannedRead {
  const SafetensorsEntry* entry;
  const TensorSlot* slot;
  float* buffer;
};

}  // namespace

std::vector<TensorView> layout_tensor_views(const FlatLayout& layout, std::string_view prefix, const float* buffer) {
  std::vector<TensorView> views;
  views.reserve(layout.tensors().size());
  for (const TensorSlot& slot : layout.tensors())
    views.push_back({std::string(prefix) + slot.name, TensorDType::f32, slot.shape, buffer + slot.offset});
  return views;
}

void read_layout_buffers(const SafetensorsReader& reader, const FlatLayout& layout,
                         std::span<const LayoutBufferTarget> targets, LoadDTypes dtypes, std::string_view remedy) {
  const std::string model = layout.spec();
  std::vector<std::string> problems;
  std::vector<PlannedRead> reads;
  std::set<std::string, std::less<>> expected;
  for (const LayoutBufferTarget& target : targets) {
    for (const TensorSlot& slot : layout.tensors()) {
      const std::string name = target.prefix + slot.name;
      expected.insert(name);
      const SafetensorsEntry* entry = reader.find(name);
      if (entry == nullptr) {
        problems.push_back(fmt::format("missing tensor '{}': --model {} expects shape {}", name, model,
                                       shape_string(slot.shape)));
      } else if (entry->shape != slot.shape) {
        problems.push_back(fmt::format("tensor '{}' has shape {} but --model {} expects {}", name,
                                       shape_string(entry->shape), model, shape_string(slot.shape)));
      } else if (!dtype_allowed(entry->dtype, dtypes)) {
        problems.push_back(fmt::format("tensor '{}' is {} but {} is needed", name,
                                       safetensors_dtype_name(entry->dtype),
                                       dtypes == LoadDTypes::f32_only ? "F32" : "F32, F64, F16 or BF16"));
      } else {
        reads.push_back({entry, &slot, target.buffer});
      }
    }
  }
  for (const SafetensorsEntry& entry : reader.entries())
    if (!expected.contains(entry.name))
      problems.push_back(fmt::format("unexpected tensor '{}' {} that --model {} does not have", entry.name,
                                     shape_string(entry.shape), model));
  if (!problems.empty()) {
    std::string listed;
    for (size_t i = 0; i < std::min(problems.size(), kMaxListedProblems); ++i) listed += "\n  " + problems[i];
    if (problems.size() > kMaxListedProblems)
      listed += fmt::format("\n  ... and {} more", problems.size() - kMaxListedProblems);
    const auto saved_model = reader.metadata().find("model");
    const std::string saved_hint = saved_model != reader.metadata().end() && saved_model->second != model
                                       ? fmt::format(" (its metadata says it was saved for --model {})",
                                                     saved_model->second)
                                       : "";
    fail("'{}'{} does not match --model {}:{}\n{}", reader.path().string(), saved_hint, model, listed, remedy);
  }
  const std::optional<TensorChecksums> checksums = read_checksums(reader);
  for (const LayoutBufferTarget& target : targets) std::fill_n(target.buffer, layout.buffer_size(), 0.f);
  std::vector<std::byte> staging;
  for (const PlannedRead& read : reads) {
    float* destination = read.buffer + read.slot->offset;
    if (read.entry->dtype == TensorDType::f32) {
      reader.read_bytes(*read.entry, reinterpret_cast<std::byte*>(destination));
      if (checksums) verify_tensor_checksum(reader, *checksums, *read.entry, reinterpret_cast<std::byte*>(destination));
    } else {
      staging.resize(read.entry->nbytes());
      reader.read_bytes(*read.entry, staging.data());
      if (checksums) verify_tensor_checksum(reader, *checksums, *read.entry, staging.data());
      convert_to_float32(read.entry->dtype, staging.data(), read.slot->numel, destination);
    }
  }
}

std::vector<std::string> load_params_except_head(const std::filesystem::path& path, const FlatLayout& layout,
                                                 float* params) {
  const SafetensorsReader reader(path);
  std::vector<std::string> skipped, problems;
  std::vector<PlannedRead> reads;
  size_t body = 0, found = 0;
  for (const TensorSlot& slot : layout.tensors()) {
    const SafetensorsEntry* entry = reader.find(slot.name);
    if (is_classifier_head(slot.name)) {
      skipped.push_back(entry == nullptr ? fmt::format("{}: not in the file (initialized from --seed)", slot.name)
                        : entry->shape != slot.shape
                            ? fmt::format("{}: the file's {} is not --model's {} (initialized from --seed)",
                                          slot.name, shape_string(entry->shape), shape_string(slot.shape))
                            : fmt::format("{}: reset as asked (initialized from --seed)", slot.name));
      continue;
    }
    ++body;
    if (entry == nullptr) {
      problems.push_back(fmt::format("missing tensor '{}': --model {} expects shape {}", slot.name, layout.spec(),
                                     shape_string(slot.shape)));
      continue;
    }
    ++found;
    if (entry->shape != slot.shape) {
      problems.push_back(fmt::format("tensor '{}' has shape {} but --model {} expects {}", slot.name,
                                     shape_string(entry->shape), layout.spec(), shape_string(slot.shape)));
    } else if (!is_floating(entry->dtype)) {
      problems.push_back(fmt::format("tensor '{}' is {} but F32, F64, F16 or BF16 is needed", slot.name,
                                     safetensors_dtype_name(entry->dtype)));
    } else {
      reads.push_back({entry, &slot, params});
    }
  }
  const auto saved_model = reader.metadata().find("model");
  DDPX_REQUIRE(2 * found >= body,
               "--reset-head: '{}'{} holds only {} of the {} tensors of --model {} outside its classifier head: it is "
               "the weights of another model family or shape; --reset-head keeps everything but the head, so give "
               "weights of the same family and shape", path.string(),
               saved_model != reader.metadata().end()
                   ? fmt::format(" (saved for --model {})", saved_model->second) : std::string(),
               found, body, layout.spec());
  for (const SafetensorsEntry& entry : reader.entries())
    if (layout.find(entry.name) == nullptr && !is_classifier_head(entry.name))
      problems.push_back(fmt::format("unexpected tensor '{}' {} that --model {} does not have", entry.name,
                                     shape_string(entry.shape), layout.spec()));
  if (!problems.empty()) {
    std::string listed;
    for (size_t i = 0; i < std::min(problems.size(), kMaxListedProblems); ++i) listed += "\n  " + problems[i];
    if (problems.size() > kMaxListedProblems)
      listed += fmt::format("\n  ... and {} more", problems.size() - kMaxListedProblems);
    fail("--load {} --reset-head: the tensors outside the classifier head do not match --model {}:{}",
         path.string(), layout.spec(), listed);
  }
  const std::optional<TensorChecksums> checksums = read_checksums(reader);
  std::vector<std::byte> staging;
  for (const PlannedRead& read : reads) {
    float* destination = read.buffer + read.slot->offset;
    staging.resize(read.entry->nbytes());
    reader.read_bytes(*read.entry, staging.data());
    if (checksums) verify_tensor_checksum(reader, *checksums, *read.entry, staging.data());
    convert_to_float32(read.entry->dtype, staging.data(), read.slot->numel, destination);
  }
  return skipped;
}

TensorMetadata weights_metadata(const FlatLayout& layout, int64_t step, const std::vector<std::string>& class_names) {
  TensorMetadata metadata = {{"ddpx.model", layout.spec()}, {"ddpx.step", std::to_string(step)}};
  if (!class_names.empty()) metadata["ddpx.classes"] = nlohmann::json(class_names).dump();
  return metadata;
}

std::vector<std::string> weights_class_names(const SafetensorsReader& reader) {
  const auto found = reader.metadata().find("ddpx.classes");
  if (found == reader.metadata().end()) return {};
  nlohmann::json names;
  try {
    names = parse_json(found->second, "'" + reader.path().string() + "' metadata 'ddpx.classes'");
  } catch (const nlohmann::json::exception&) {
    return {};
  }
  if (!names.is_array()) return {};
  std::vector<std::string> out;
  for (const nlohmann::json& name : names) {
    if (!name.is_string()) return {};
    out.push_back(name.get<std::string>());
  }
  return out;
}

void save_params_safetensors(const std::filesystem::path& path, const FlatLayout& layout, const float* params,
                             const TensorMetadata& metadata, std::string_view flag) {
  TensorMetadata full_metadata = metadata;
  full_metadata.try_emplace("format", "pt");
  full_metadata.try_emplace("model", layout.spec());
  const std::vector<TensorView> views = layout_tensor_views(layout, "", params);
  require_finite_tensors(views, fmt::format("{} {}", flag, path.string()));
  full_metadata = with_checksums(views, full_metadata);
  write_output_file(path, flag, [&](OutputFile& file) { write_safetensors(file, views, full_metadata); });
}

void load_params_safetensors(const std::filesystem::path& path, const FlatLayout& layout, float* params) {
  const SafetensorsReader reader(path);
  const LayoutBufferTarget target{"", params};
  read_layout_buffers(reader, layout, {&target, 1}, LoadDTypes::convert_floats,
                      fmt::format("Pass the --model the file was saved for, or save the weights of a model shaped "
                                  "like --model {}.",
                                  layout.spec()));
}

}  // namespace ddpx
