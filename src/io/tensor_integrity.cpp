// Finiteness and checksums of tensor files (see tensor_integrity.hpp for the guarantees).
#include "io/tensor_integrity.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/json_parse.hpp"

namespace ddpx {

uint32_t crc32_of(const void* data, size_t bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  // zlib takes uInt lengths: feed at most 1 GiB at a time.
  while (bytes > 0) {
    const size_t chunk = std::min<size_t>(bytes, size_t{1} << 30);
    crc = crc32(crc, p, static_cast<uInt>(chunk));
    p += chunk;
    bytes -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

void require_finite_tensors(std::span<const TensorView> views, const std::string& what) {
  for (const TensorView& view : views) {
    if (view.dtype != TensorDType::f32) continue;
    const auto* values = static_cast<const float*>(view.data);
    const auto* bits = static_cast<const uint32_t*>(view.data);
    const size_t n = shape_numel(view.shape);
    // Inf and NaN are the values whose exponent bits are all ones: a branch-free pass the compiler vectorizes.
    uint32_t any_bad = 0;
    for (size_t i = 0; i < n; ++i) any_bad |= static_cast<uint32_t>((bits[i] & 0x7f800000u) == 0x7f800000u);
    if (any_bad == 0) continue;
    size_t bad = 0;
    while (bad < n && std::isfinite(values[bad])) ++bad;
    fail("refusing to write {}: tensor '{}' holds {} at element {} (of {}); the state is not finite, so writing "
         "it would replace good data with a diverged run's", what, view.name, values[bad], bad, n);
  }
}

TensorMetadata with_checksums(std::span<const TensorView> views, const TensorMetadata& metadata) {
  nlohmann::json sums = nlohmann::json::object();
  std::vector<TensorDescription> table;
  for (const TensorView& view : views) {
    sums[view.name] = fmt::format("{:08x}", crc32_of(view.data, shape_numel(view.shape) * dtype_size(view.dtype)));
    table.push_back({view.name, view.dtype, view.shape});
  }
  TensorMetadata out = metadata;
  out.erase(kHeaderChecksumKey);
  out[kChecksumKey] = sums.dump();
  const std::string text = header_checksum_text(out, std::move(table));
  out[kHeaderChecksumKey] = fmt::format("{:08x}", crc32_of(text.data(), text.size()));
  return out;
}

std::string header_checksum_text(const TensorMetadata& metadata, std::vector<TensorDescription> tensors) {
  std::string text;
  for (const auto& [key, value] : metadata)
    if (key != kHeaderChecksumKey) text += fmt::format("{}:{}={}:{}\n", key.size(), key, value.size(), value);
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorDescription& a, const TensorDescription& b) { return a.name < b.name; });
  for (const TensorDescription& tensor : tensors)
    text += fmt::format("{}:{} {} [{}]\n", tensor.name.size(), tensor.name, safetensors_dtype_name(tensor.dtype),
                        fmt::join(tensor.shape, ","));
  return text;
}

bool verify_header_checksum(const SafetensorsReader& reader) {
  const auto it = reader.metadata().find(kHeaderChecksumKey);
  if (it == reader.metadata().end()) return false;
  std::vector<TensorDescription> table;
  for (const SafetensorsEntry& entry : reader.entries()) table.push_back({entry.name, entry.dtype, entry.shape});
  const std::string text = header_checksum_text(reader.metadata(), std::move(table));
  const std::string computed = fmt::format("{:08x}", crc32_of(text.data(), text.size()));
  DDPX_REQUIRE(computed == it->second,
               "'{}': its header (metadata such as the step and the RNG states, and the tensors' names, types and "
               "shapes) does not match its checksum (crc32 {} written, {} read): the file was damaged or edited "
               "after it was written; use another copy or an earlier checkpoint",
               reader.path().string(), it->second, computed);
  return true;
}

std::optional<TensorChecksums> read_checksums(const SafetensorsReader& reader) {
  verify_header_checksum(reader);
  const auto it = reader.metadata().find(kChecksumKey);
  if (it == reader.metadata().end()) return std::nullopt;
  TensorChecksums sums;
  try {
    sums.by_name = parse_json(it->second, fmt::format("'{}' metadata '{}'", reader.path().string(), kChecksumKey));
  } catch (const nlohmann::json::exception& e) {
    fail("'{}': metadata '{}' is not valid JSON ({}); the file is damaged", reader.path().string(), kChecksumKey,
         e.what());
  }
  DDPX_REQUIRE(sums.by_name.is_object(), "'{}': metadata '{}' must be a JSON object; the file is damaged",
               reader.path().string(), kChecksumKey);
  return sums;
}

void verify_tensor_checksum(const SafetensorsReader& reader, const TensorChecksums& checksums,
                            const SafetensorsEntry& entry, const std::byte* bytes) {
  const auto it = checksums.by_name.find(entry.name);
  DDPX_REQUIRE(it != checksums.by_name.end() && it->is_string(),
               "'{}': tensor '{}' has no checksum in metadata '{}' although the file records checksums; the file "
               "is damaged or was edited", reader.path().string(), entry.name, kChecksumKey);
  const std::string computed = fmt::format("{:08x}", crc32_of(bytes, entry.nbytes()));
  DDPX_REQUIRE(computed == it->get<std::string>(),
               "'{}': tensor '{}' does not match its checksum (crc32 {} written, {} read): the file was damaged "
               "after it was written (disk, copy or transfer); use another copy or an earlier checkpoint",
               reader.path().string(), entry.name, it->get<std::string>(), computed);
}

}  // namespace ddpx
