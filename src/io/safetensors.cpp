// Safetensors reader and writer (see safetensors.hpp for the format and the guarantees).
#include "io/safetensors.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/json_parse.hpp"

namespace ddpx {

namespace {

// The reference implementation refuses headers above 100 MB; a larger length means a corrupt file.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr std::string_view kMetadataKey = "__metadata__";

constexpr std::array<TensorDType, 7> kAllDTypes = {TensorDType::f32, TensorDType::f64, TensorDType::f16,
                                                   TensorDType::bf16, TensorDType::i32, TensorDType::i64,
                                                   TensorDType::u8};

std::string supported_dtype_names() {
  std::vector<std::string_view> names;
  for (TensorDType dtype : kAllDTypes) names.push_back(safetensors_dtype_name(dtype));
  return fmt::format("{}", fmt::join(names, ", "));
}

TensorDType parse_dtype(const std::string& name, const std::string& tensor, const std::filesystem::path& path) {
  for (TensorDType dtype : kAllDTypes)
    if (safetensors_dtype_name(dtype) == name) return dtype;
  fail("tensor '{}' in '{}' has dtype '{}', which ddpx does not read (supported: {}); convert it in Python, "
       "e.g. tensor.float()",
       tensor, path.string(), name, supported_dtype_names());
}

// An array of non-negative integers, or an error naming the tensor and the field.
std::vector<uint64_t> parse_unsigned_array(const nlohmann::json& value, std::string_view field,
                                           const std::string& tensor, const std::filesystem::path& path) {
  DDPX_REQUIRE(value.is_array(), "tensor '{}' in '{}': '{}' must be an array of non-negative integers, got {}",
               tensor, path.string(), field, json_excerpt(value));
  std::vector<uint64_t> out;
  for (const auto& element : value) {
    DDPX_REQUIRE(element.is_number_unsigned(),
                 "tensor '{}' in '{}': '{}' must hold non-negative integers, got {}", tensor, path.string(), field,
                 json_excerpt(value));
    out.push_back(element.get<uint64_t>());
  }
  return out;
}

SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& value, const std::filesystem::path& path) {
  DDPX_REQUIRE(value.is_object(), "tensor '{}' in '{}': header entry must be an object, got {}", name, path.string(),
               json_excerpt(value));
  for (const char* field : {"dtype", "shape", "data_offsets"})
    DDPX_REQUIRE(value.contains(field), "tensor '{}' in '{}': header entry lacks '{}'", name, path.string(), field);
  DDPX_REQUIRE(value["dtype"].is_string(), "tensor '{}' in '{}': 'dtype' must be a string, got {}", name,
               path.string(), json_excerpt(value["dtype"]));
  SafetensorsEntry entry;
  entry.name = name;
  entry.dtype = parse_dtype(value["dtype"].get<std::string>(), name, path);
  for (uint64_t dim : parse_unsigned_array(value["shape"], "shape", name, path)) {
    DDPX_REQUIRE(dim <= static_cast<uint64_t>(INT64_MAX), "tensor '{}' in '{}': dimension {} is too large", name,
                 path.string(), dim);
    entry.shape.push_back(static_cast<int64_t>(dim));
  }
  const std::vector<uint64_t> offsets = parse_unsigned_array(value["data_offsets"], "data_offsets", name, path);
  DDPX_REQUIRE(offsets.size() == 2 && offsets[0] <= offsets[1],
               "tensor '{}' in '{}': data_offsets must be [begin, end] with begin <= end, got {}", name,
               path.string(), json_excerpt(value["data_offsets"]));
  entry.data_begin = offsets[0];
  entry.data_end = offsets[1];
  size_t numel = 0;
  try {
    numel = shape_numel(entry.shape);
  } catch (const Error& e) {
    fail("tensor '{}' in '{}': {}", name, path.string(), e.what());
  }
  uint64_t expected_bytes = 0;
  DDPX_REQUIRE(!__builtin_mul_overflow(static_cast<uint64_t>(numel), dtype_size(entry.dtype), &expected_bytes),
               "tensor '{}' in '{}': shape {} is too large", name, path.string(), shape_string(entry.shape));
  DDPX_REQUIRE(entry.nbytes() == expected_bytes,
               "tensor '{}' in '{}': data_offsets [{}, {}) hold {} bytes but {} {} needs {}; the header is corrupt",
               name, path.string(), entry.data_begin, entry.data_end, entry.nbytes(),
               safetensors_dtype_name(entry.dtype), shape_string(entry.shape), expected_bytes);
  return entry;
}

TensorMetadata parse_metadata(const nlohmann::json& value, const std::filesystem::path& path) {
  DDPX_REQUIRE(value.is_object(), "'{}': __metadata__ must be an object of strings, got {}", path.string(),
               json_excerpt(value));
  TensorMetadata metadata;
  for (const auto& [key, item] : value.items()) {
    DDPX_REQUIRE(item.is_string(), "'{}': __metadata__ entry '{}' must be a string, got {}", path.string(), key,
                 json_excerpt(item));
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

// Tensors must tile the data section exactly: no overlap, no gap, nothing past the end, nothing left over.
void check_data_layout(std::vector<SafetensorsEntry>& entries, uint64_t data_size, const std::filesystem::path& path) {
  std::stable_sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.data_begin != b.data_begin ? a.data_begin < b.data_begin : a.data_end < b.data_end;
  });
  uint64_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry& entry : entries) {
    DDPX_REQUIRE(entry.data_end <= data_size,
                 "tensor '{}' in '{}': data_offsets [{}, {}) go past the end of the data section ({} bytes); the "
                 "file is truncated or its header is corrupt",
                 entry.name, path.string(), entry.data_begin, entry.data_end, data_size);
    DDPX_REQUIRE(entry.data_begin >= covered,
                 "tensor '{}' in '{}': data_offsets [{}, {}) overlap tensor '{}' at [{}, {}); the header is corrupt",
                 entry.name, path.string(), entry.data_begin, entry.data_end, previous ? previous->name : "",
                 previous ? previous->data_begin : 0, previous ? previous->data_end : 0);
    DDPX_REQUIRE(entry.data_begin == covered,
                 "'{}': data bytes [{}, {}) before tensor '{}' belong to no tensor; the header is corrupt",
                 path.string(), covered, entry.data_begin, entry.name);
    covered = entry.data_end;
    previous = &entry;
  }
  DDPX_REQUIRE(covered == data_size,
               "'{}': the data section has {} bytes but its tensors cover only {}; the file has trailing bytes or "
               "its header is corrupt",
               path.string(), data_size, covered);
}

}  // namespace

std::string_view safetensors_dtype_name(TensorDType dtype) {
  switch (dtype) {
    case TensorDType::f32: return "F32";
    case TensorDType::f64: return "F64";
    case TensorDType::f16: return "F16";
    case TensorDType::bf16: return "BF16";
    case TensorDType::i32: return "I32";
    case TensorDType::i64: return "I64";
    case TensorDType::u8: return "U8";
  }
  fail("unknown TensorDType {}", static_cast<int>(dtype));
}

SafetensorsReader::SafetensorsReader(const std::filesystem::path& path) : file_(path) {
  const uint64_t file_size = file_.size();
  DDPX_REQUIRE(file_size >= 8,
               "'{}' is not a complete safetensors file: it has {} bytes, fewer than the 8-byte header length; it "
               "is truncated or empty",
               path.string(), file_size);
  uint64_t header_size = 0;  // little-endian on disk; ddpx hosts are little-endian (tensor.hpp)
  file_.read_at(0, &header_size, 8);
  DDPX_REQUIRE(header_size <= file_size - 8,
               "'{}': header length {} goes beyond the end of the file ({} bytes follow the length field); the file "
               "is truncated or not a safetensors file",
               path.string(), header_size, file_size - 8);
  DDPX_REQUIRE(header_size <= kMaxHeaderBytes, "'{}': header length {} exceeds the {}-byte limit; not a safetensors file",
               path.string(), header_size, kMaxHeaderBytes);
  std::string header(header_size, '\0');
  file_.read_at(8, header.data(), header_size);
  data_start_ = 8 + header_size;

  std::set<std::string> seen_names;
  std::string duplicate;
  const auto find_duplicates = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string() &&
        !seen_names.insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  nlohmann::json json;
  try {
    json = parse_json(header, "safetensors '" + path.string() + "' header", find_duplicates);
  } catch (const nlohmann::json::exception& e) {
    fail("'{}': the safetensors header is not valid JSON ({}); the file is corrupt or not safetensors", path.string(),
         e.what());
  }
  DDPX_REQUIRE(json.is_object(), "'{}': the safetensors header must be a JSON object, got {}", path.string(),
               json.type_name());
  DDPX_REQUIRE(duplicate.empty(), "'{}': tensor '{}' appears twice in the header; the file is corrupt",
               path.string(), duplicate);
  for (const auto& [name, value] : json.items()) {
    if (name == kMetadataKey)
      metadata_ = parse_metadata(value, path);
    else
      entries_.push_back(parse_entry(name, value, path));
  }
  check_data_layout(entries_, file_size - data_start_, path);
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].name, i);
}

const SafetensorsEntry* SafetensorsReader::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const SafetensorsEntry& SafetensorsReader::at(std::string_view name) const {
  const SafetensorsEntry* entry = find(name);
  DDPX_REQUIRE(entry != nullptr, "'{}' has no tensor '{}' ({} tensors in the file)", path().string(), name,
               entries_.size());
  return *entry;
}

void SafetensorsReader::read_bytes(const SafetensorsEntry& entry, std::byte* destination) const {
  file_.read_at(data_start_ + entry.data_begin, destination, entry.nbytes());
}

HostTensor SafetensorsReader::read(const SafetensorsEntry& entry) const {
  HostTensor tensor = HostTensor::zeros(entry.dtype, entry.shape);
  read_bytes(entry, tensor.data.data());
  return tensor;
}

void write_safetensors(OutputFile& file, std::span<const TensorView> tensors, const TensorMetadata& metadata) {
  const std::string where = file.path().string();
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (const TensorView& tensor : tensors) {
    DDPX_REQUIRE(!tensor.name.empty() && tensor.name != kMetadataKey,
                 "cannot write '{}': tensor name '{}' is empty or reserved", where, tensor.name);
    DDPX_REQUIRE(!header.contains(tensor.name), "cannot write '{}': tensor '{}' is given twice", where, tensor.name);
    DDPX_REQUIRE(std::ranges::all_of(tensor.shape, [](int64_t dim) { return dim >= 0; }),
                 "cannot write '{}': tensor '{}' has shape {} with a negative dimension", where, tensor.name,
                 shape_string(tensor.shape));
    const uint64_t nbytes = shape_numel(tensor.shape) * dtype_size(tensor.dtype);
    DDPX_REQUIRE(nbytes == 0 || tensor.data != nullptr, "cannot write '{}': tensor '{}' has no data", where,
                 tensor.name);
    header[tensor.name] = {{"dtype", safetensors_dtype_name(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + nbytes}}};
    sizes.push_back(nbytes);
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail("cannot write '{}': a tensor name or metadata string is not valid UTF-8 ({})", where, e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t header_size = text.size();
  file.write(&header_size, 8);
  file.write(text.data(), text.size());
  for (size_t i = 0; i < tensors.size(); ++i) file.write(tensors[i].data, sizes[i]);
}

void write_safetensors(const std::filesystem::path& path, std::span<const TensorView> tensors,
                       const TensorMetadata& metadata) {
  OutputFile file(path);
  write_safetensors(file, tensors, metadata);
  file.close();
}

const HostTensor* SafetensorsContents::find(std::string_view name) const {
  for (const auto& named : tensors)
    if (named.name == name) return &named.tensor;
  return nullptr;
}

SafetensorsContents read_safetensors(const std::filesystem::path& path) {
  SafetensorsReader reader(path);
  SafetensorsContents contents;
  contents.metadata = reader.metadata();
  for (const auto& entry : reader.entries()) contents.tensors.push_back({entry.name, reader.read(entry)});
  return contents;
}

void write_safetensors(const std::filesystem::path& path, const SafetensorsContents& contents) {
  std::vector<TensorView> views;
  for (const auto& named : contents.tensors) {
    DDPX_REQUIRE(named.tensor.data.size() == named.tensor.numel() * dtype_size(named.tensor.dtype),
                 "cannot write '{}': tensor '{}' holds {} bytes but {} {} needs {}", path.string(), named.name,
                 named.tensor.data.size(), dtype_name(named.tensor.dtype), shape_string(named.tensor.shape),
                 named.tensor.numel() * dtype_size(named.tensor.dtype));
    views.push_back({named.name, named.tensor.dtype, named.tensor.shape, named.tensor.data.data()});
  }
  write_safetensors(path, views, contents.metadata);
}

}  // namespace ddpx
