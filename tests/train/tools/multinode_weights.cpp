// multinode_weights: the data and the weight comparison of the multi-node training tests (shell scripts).
//   multinode_weights data DIR        writes DIR/images.npy [64, C, H, W] float32 and DIR/labels.npy [64] int32
//                                     for vit_tiny_test (the same deterministic values as the 2-rank test)
//   multinode_weights compare A B     A and B are .safetensors of vit_tiny_test; prints the largest absolute
//                                     difference and how far A moved from the seed-0 initialization; exit 0 when
//                                     they agree within fp32 rounding (< 2e-5) and training moved A (> 1e-2)
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/npy.hpp"
#include "io/param_safetensors.hpp"
#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_init.hpp"

namespace {
using namespace ddpx;

std::vector<float> weights(const std::string& path, const VitLayout& layout) {
  std::vector<float> params(layout.buffer_size());
  load_params_safetensors(path, layout, params.data());
  return params;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  return worst;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    const VitConfig config = parse_vit_spec("vit_tiny_test");
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "data" && argc == 3) {
      const int64_t count = 64, numel = config.image_numel();
      std::vector<float> images(static_cast<size_t>(count * numel));
      std::vector<int32_t> labels(static_cast<size_t>(count));
      for (size_t i = 0; i < images.size(); ++i) images[i] = std::sin(0.37f * static_cast<float>(i)) * 1.5f;
      for (int64_t i = 0; i < count; ++i) labels[size_t(i)] = static_cast<int32_t>((i * 7) % config.num_classes);
      const std::string dir = argv[2];
      write_npy(dir + "/images.npy", HostTensor::from_values<float>(
                                         {count, config.channels, config.image_size, config.image_size}, images));
      write_npy(dir + "/labels.npy", HostTensor::from_values<int32_t>({count}, labels));
      return 0;
    }
    if (mode == "compare" && argc == 4) {
      const VitLayout layout(config);
      const std::vector<float> a = weights(argv[2], layout), b = weights(argv[3], layout);
      std::vector<float> initial(a.size());
      init_vit_params(layout, initial.data(), 0);
      const double difference = max_abs_diff(a, b), moved = max_abs_diff(a, initial);
      std::printf("max |a - b| = %.3g (limit 2e-5), moved from init by %.3g (at least 1e-2)\n", difference, moved);
      return difference < 2e-5 && moved > 1e-2 ? 0 : 1;
    }
    std::fprintf(stderr, "usage: multinode_weights data DIR | compare A.safetensors B.safetensors\n");
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "multinode_weights: %s\n", e.what());
    return 2;
  }
}
