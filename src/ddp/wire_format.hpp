// WireFormat: the 16-bit formats CastHook puts on the wire (kept apart so CUDA files, compiled as C++17, can
// include it).
#pragma once

namespace ddpx {

enum class WireFormat { fp16, bf16 };

}  // namespace ddpx
