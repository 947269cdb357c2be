// Fuzz target: the .npy reader (read_npy: `--images`, `--labels`, reference activations).
// The reader must guarantee, for any bytes: no crash, no hang, memory bounded by the file's size, and every
// refusal a ddpx::Error naming the file; an accepted array holds exactly numel(shape) * dtype-size bytes. The
// checked overload (dtype and shape, as the .npy dataset reads images) runs on the same bytes.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ddpx::fuzz::write_scratch_file("input.npy", data, size);
  ddpx::fuzz::expect_clean_refusal([&] {
    const ddpx::HostTensor tensor = ddpx::read_npy(path);
    if (tensor.data.size() != tensor.numel() * ddpx::dtype_size(tensor.dtype)) std::abort();
  });
  const int64_t images_shape[] = {-1, 3, -1, -1};
  ddpx::fuzz::expect_clean_refusal([&] { ddpx::read_npy(path, ddpx::TensorDType::f32, images_shape); });
  return 0;
}
