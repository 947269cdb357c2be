// Dense bf16 tensor-core peaks of the GPUs whose figures are published, by the name NVML/CUDA report: the
// denominator of model FLOP utilization (MFU) in `ddpx bench` and bench/summarize.py.
// Guarantees: dense_bf16_peak_flops("NVIDIA H200") == 989e12 (H100 SXM and H200: 989 TFLOP/s, H100 PCIe 756,
// A100 312, L40S 362, from NVIDIA's data sheets, without sparsity); nullopt for any other name, so an
// unknown GPU gets no MFU rather than a wrong one. The same peak serves every precision (the convention of
// the issue and of published ViT MFU figures): fp32/tf32 rows read as a share of the bf16 peak.
#pragma once
#include <optional>
#include <string_view>

namespace ddpx {

std::optional<double> dense_bf16_peak_flops(std::string_view device_name);

}  // namespace ddpx
