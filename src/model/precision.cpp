// Precision parsing; see precision.hpp.
#include "model/precision.hpp"

#include "core/error.hpp"

namespace ddpx {

Precision parse_precision(std::string_view text) {
  if (text == "fp32") return Precision::fp32;
  if (text == "tf32") return Precision::tf32;
  if (text == "bf16") return Precision::bf16;
  fail("--precision '{}' is not known; choose fp32 (exact), tf32 (TF32 matmuls) or bf16 (bf16 compute, fp32 "
       "master weights)",
       text);
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
  }
  return "unknown";
}

}  // namespace ddpx
