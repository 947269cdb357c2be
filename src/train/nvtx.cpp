// NVTX ranges through the header-only NVTX3 API (see nvtx.hpp).
#include "train/nvtx.hpp"

#ifdef DDPX_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace ddpx {

#ifdef DDPX_HAVE_CUDA
NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }
NvtxRange::~NvtxRange() { nvtxRangePop(); }
bool nvtx_enabled() { return true; }
#else
NvtxRange::NvtxRange(const char*) {}
NvtxRange::~NvtxRange() = default;
bool nvtx_enabled() { return false; }
#endif

}  // namespace ddpx
