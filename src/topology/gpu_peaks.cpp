// GPU peaks; see gpu_peaks.hpp.
#include "topology/gpu_peaks.hpp"

#include <utility>

namespace ddpx {

std::optional<double> dense_bf16_peak_flops(std::string_view device_name) {
  // Most specific first: "H100 PCIe" before "H100".
  static constexpr std::pair<std::string_view, double> kPeaks[] = {
      {"H200", 989e12}, {"H100 PCIe", 756e12}, {"H100", 989e12}, {"A100", 312e12}, {"L40S", 362e12},
  };
  for (const auto& [name, peak] : kPeaks)
    if (device_name.find(name) != std::string_view::npos) return peak;
  return std::nullopt;
}

}  // namespace ddpx
