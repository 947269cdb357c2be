// Fuzz target: loading parameters from .safetensors into a model's layout (load_params_safetensors: `ddpx train
// --load`, `ddpx eval --weights`), F32/F64/F16/BF16 converted to fp32.
// The reader must guarantee, for any bytes: no crash, no hang, memory bounded by the file and the model, every
// refusal a ddpx::Error naming the file (and tensors), and nothing written outside the parameter buffer.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_support.hpp"
#include "io/param_safetensors.hpp"
#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ddpx::VitLayout layout(ddpx::parse_vit_spec(ddpx::fuzz::kModelSpec));
  const auto path = ddpx::fuzz::write_scratch_file("params.safetensors", data, size);
  std::vector<float> params(layout.buffer_size());
  ddpx::fuzz::expect_clean_refusal([&] { ddpx::load_params_safetensors(path, layout, params.data()); });
  return 0;
}
