// Fuzz target: the .safetensors reader (SafetensorsReader, read_safetensors: `--load`, `--weights`, checkpoints).
// The reader must guarantee, for any bytes: no crash, no hang, memory bounded by the file's size (a tensor is
// allocated only after its bytes were found in the file), and every refusal a ddpx::Error naming the file.
// What is accepted is read whole, so every tensor's byte range is exercised too.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ddpx::fuzz::write_scratch_file("input.safetensors", data, size);
  ddpx::fuzz::expect_clean_refusal([&] {
    const ddpx::SafetensorsContents contents = ddpx::read_safetensors(path);
    for (const auto& named : contents.tensors)
      if (contents.find(named.name) == nullptr) std::abort();  // every tensor read is found by its name
  });
  return 0;
}
