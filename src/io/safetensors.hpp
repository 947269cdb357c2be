// Reading and writing .safetensors files (https://github.com/huggingface/safetensors, format version 0.x):
// 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}},
// then the data section. Guarantees:
//  - SafetensorsReader validates the whole header before any tensor is read: truncation, a header length beyond
//    the file, bad JSON, duplicate names, unknown dtypes, offsets out of range, overlapping, leaving gaps, or not
//    matching dtype x shape all throw ddpx::Error naming the file and, where there is one, the tensor.
//  - Tensor bytes are read on demand with positioned reads (no whole-file copy), so multi-GB files load straight
//    into their destination buffers.
//  - The writer emits what the reference implementation accepts: header padded with spaces to a multiple of 8
//    bytes (so data is 8-byte aligned), tensors back to back in the order given, no holes.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/posix_file.hpp"
#include "io/tensor.hpp"

namespace ddpx {

using TensorMetadata = std::map<std::string, std::string>;

// "F32", "F64", "F16", "BF16", "I32", "I64", "U8".
std::string_view safetensors_dtype_name(TensorDType dtype);

struct SafetensorsEntry {
  std::string name;
  TensorDType dtype = TensorDType::f32;
  std::vector<int64_t> shape;
  uint64_t data_begin = 0, data_end = 0;  // byte range inside the data section
  uint64_t nbytes() const { return data_end - data_begin; }
};

class SafetensorsReader {
 public:
  // Opens the file and validates its header; throws ddpx::Error naming the file (and tensor) on any defect.
  explicit SafetensorsReader(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return file_.path(); }
  const TensorMetadata& metadata() const { return metadata_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }  // ordered by data offset
  const SafetensorsEntry* find(std::string_view name) const;                  // nullptr when absent
  const SafetensorsEntry& at(std::string_view name) const;                    // throws naming file and tensor

  // Reads the entry's bytes (entry.nbytes() of them) into destination, as stored.
  void read_bytes(const SafetensorsEntry& entry, std::byte* destination) const;
  HostTensor read(const SafetensorsEntry& entry) const;
  HostTensor read(std::string_view name) const { return read(at(name)); }

 private:
  InputFile file_;
  uint64_t data_start_ = 0;
  TensorMetadata metadata_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in entries_
};

// A tensor to write, pointing at bytes owned by the caller (numel(shape) * dtype_size(dtype) of them).
struct TensorView {
  std::string name;
  TensorDType dtype = TensorDType::f32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// Writes the tensors in the given order. Names must be unique, non-empty and not "__metadata__".
void write_safetensors(OutputFile& file, std::span<const TensorView> tensors, const TensorMetadata& metadata);
void write_safetensors(const std::filesystem::path& path, std::span<const TensorView> tensors,
                       const TensorMetadata& metadata = {});

// Whole-file convenience for small files (tests, fixtures, exported activations).
struct NamedTensor {
  std::string name;
  HostTensor tensor;
};
struct SafetensorsContents {
  std::vector<NamedTensor> tensors;  // in data order when read
  TensorMetadata metadata;
  const HostTensor* find(std::string_view name) const;
};
SafetensorsContents read_safetensors(const std::filesystem::path& path);
void write_safetensors(const std::filesystem::path& path, const SafetensorsContents& contents);

}  // namespace ddpx
