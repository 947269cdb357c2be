// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0), the exchange format for reference
// activations and data dumped from PyTorch. Guarantees: only little-endian C-order arrays of '<f4', '<f8',
// '<f2', '<i4', '<i8', '|u1' are accepted; Fortran order, big-endian or other dtypes, a malformed header, a
// truncated file or trailing bytes throw ddpx::Error naming the file and saying how to re-save it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>

#include "io/posix_file.hpp"
#include "io/tensor.hpp"

namespace ddpx {

HostTensor read_npy(const std::filesystem::path& path);
// Also checks the dtype and the shape; -1 in expected_shape matches any size of that dimension.
HostTensor read_npy(const std::filesystem::path& path, TensorDType expected_dtype,
                    std::span<const int64_t> expected_shape);

// Writes format 1.0 (2.0 when the header does not fit 1.0). bf16 has no .npy dtype and is refused.
void write_npy(const std::filesystem::path& path, const HostTensor& tensor);
void write_npy(OutputFile& file, const HostTensor& tensor);  // into an open file (io/output_file.hpp's writers)

}  // namespace ddpx
