// What ddpx checks about the tensors it writes and reads back: every value finite before writing (weights and
// checkpoints are never written from a diverged state), and a CRC-32 per tensor stored in the safetensors
// metadata under "ddpx.crc32" (a JSON object: tensor name -> 8 hex digits of zlib's crc32 of the stored bytes),
// verified on reading.
// Guarantees: require_finite_tensors() throws ddpx::Error naming the file, the tensor and the first bad element;
// with_checksums() adds the key without touching the tensors (PyTorch's safetensors loader ignores metadata, so
// torchvision still loads the file); verify_tensor_checksum() throws naming the file and the tensor whose bytes
// differ from what was written (one flipped bit is always caught: CRC-32 detects every 1- and 2-bit error).
// The header is checksummed too: "ddpx.header_crc32" (8 hex digits) is the CRC-32 of every other metadata entry
// (the tensor checksums included) and every tensor's name, dtype and shape, in the canonical form of
// header_checksum_text(); verify_header_checksum() throws naming the file when it differs, so a flipped bit in a
// checkpoint's step, RNG states or data position is refused like one in a tensor.
// The checksum is zlib's crc32, the same as Python's zlib.crc32 over the tensor's bytes, so files can be checked
// without ddpx.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "io/safetensors.hpp"

namespace ddpx {

inline constexpr const char* kChecksumKey = "ddpx.crc32";
inline constexpr const char* kHeaderChecksumKey = "ddpx.header_crc32";

uint32_t crc32_of(const void* data, size_t bytes);

// Throws unless every F32 value of every view is finite; `what` names the output ("--save w.safetensors").
void require_finite_tensors(std::span<const TensorView> views, const std::string& what);

// metadata plus kChecksumKey over the views' bytes and kHeaderChecksumKey over the metadata and the views' table.
TensorMetadata with_checksums(std::span<const TensorView> views, const TensorMetadata& metadata);

// What kHeaderChecksumKey covers: for each metadata entry but kHeaderChecksumKey, in key order,
// "<key bytes>:<key>=<value bytes>:<value>\n"; then for each tensor, in name order, "<name bytes>:<name> <dtype>
// [d0,d1,...]\n" (dtype as safetensors writes it: F32, BF16, ...).
struct TensorDescription {
  std::string name;
  TensorDType dtype = TensorDType::f32;
  std::vector<int64_t> shape;
};
std::string header_checksum_text(const TensorMetadata& metadata, std::vector<TensorDescription> tensors);

// Throws when the file carries kHeaderChecksumKey and its header does not match it; false when it carries none.
bool verify_header_checksum(const SafetensorsReader& reader);

// The checksums a file carries (nullopt: none, e.g. a file saved by PyTorch). Throws when the key is malformed or
// the header checksum (when present) does not match.
struct TensorChecksums {
  nlohmann::json by_name;
};
std::optional<TensorChecksums> read_checksums(const SafetensorsReader& reader);

// Compares the crc32 of `bytes` (the entry's stored bytes) with the recorded one.
void verify_tensor_checksum(const SafetensorsReader& reader, const TensorChecksums& checksums,
                            const SafetensorsEntry& entry, const std::byte* bytes);

}  // namespace ddpx
