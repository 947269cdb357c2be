// NvtxRange: an RAII NVTX range, so Nsight Systems shows the seed's "Batch i", "get batch", "forward",
// "backward", "optimizer step" around ddpx's own work.
// Guarantees: push in the constructor, pop in the destructor, on the calling thread (NVTX ranges are
// per-thread). In builds without CUDA (DDPX_HAVE_CUDA undefined when ddpx_train was compiled) both are no-ops;
// this header is the same in both builds, so callers need no #ifdef. NVTX itself costs nothing measurable when no
// tool is attached.
#pragma once
#include <string>

namespace ddpx {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  explicit NvtxRange(const std::string& name) : NvtxRange(name.c_str()) {}
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// True when this build emits NVTX ranges.
bool nvtx_enabled();

}  // namespace ddpx
