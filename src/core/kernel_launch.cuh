// Kernel launches that may overlap the previous kernel's tail (programmatic dependent launch, Hopper and later):
// the one way every CUDA-built folder (kernels, ddp) launches its kernels. Include it only from .cu files.
// Guarantee: a kernel launched with launch_after_producer() (or launch_kernel() with overlap) is correct whatever
// its stream's previous work was, provided it calls begin_after_producer() (or wait_for_producer()) before it
// reads or writes memory that earlier work on the stream may touch; code before that call may read only memory
// that nothing in flight writes. Every launch error becomes a ddpx::Error naming the kernel. DDPX_PDL=0 launches
// every kernel in plain stream order (for A/B measurements, or to rule the overlap out when debugging).
//
// Note [Programmatic dependent launch]
// Between two kernels on a stream the GPU waits for the first to finish and flush its writes, then launches and
// places the second's blocks: a gap at each of the ~600 kernel boundaries of a ViT-L/32 step (overlapping our ~300
// kernels this way measured about 0.1 ms a step in a CUDA graph, 1%, and 6% launched eagerly; docs/results.md).
// A kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization may instead be launched
// as soon as every block of the kernel before it has executed griddepcontrol.launch_dependents or exited; its
// blocks are placed then, and each waits in griddepcontrol.wait until that kernel has completed and its memory is
// visible. Our kernels begin with wait, then launch_dependents (begin_after_producer()), so
//  - at most two grids are in flight: the next kernel is placed only once every block of this one is past its
//    wait, i.e. once the kernel before this one has completed;
//  - memory written by any earlier kernel is visible after the wait (the one before completed, and it started only
//    after its own predecessor had completed), so reads of older data need no more than the wait either;
//  - a prologue that reads only memory nothing in flight can write may run before the wait, overlapping the
//    previous kernel: GELU's table copy (gelu.cu); the one GELU launch that follows its table's fill kernel
//    directly is an ordinary launch (launch_kernel with overlap false).
// A kernel's first launch in a process loads it (lazy module loading), which waits for the work in flight: the
// overlap begins with each kernel's second launch.
// Stream capture turns the attribute into a programmatic graph edge. After a node that is not a kernel (memset,
// event wait, a cuBLAS call that syncs) the dependency is an ordinary one, and griddepcontrol.wait returns at
// once in a kernel that was not launched programmatically, so the same kernel is right under either launch.
#pragma once
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/error.hpp"

namespace ddpx {

// Note [Programmatic dependent launch]: blocks until the stream's previous kernel has completed and its writes are
// visible (at once when this kernel was not launched programmatically).
__device__ __forceinline__ void wait_for_producer() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the stream's next kernel be placed once every block of this one has called it (or exited).
__device__ __forceinline__ void release_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The start of every kernel launched with launch_after_producer(): wait, then let the next kernel be placed.
__device__ __forceinline__ void begin_after_producer() {
  wait_for_producer();
  release_dependents();
}

// DDPX_PDL unset or anything but "0": launches may overlap (read once per process).
inline bool programmatic_launch_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("DDPX_PDL");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

// Launches kernel<<<grid, block, shared_bytes, stream>>>(args...), with programmatic stream serialization when
// overlap is true (and DDPX_PDL is not 0). The kernel must begin with begin_after_producer() or wait_for_producer().
template <typename... Params, typename... Args>
void launch_kernel(const char* name, bool overlap, void (*kernel)(Params...), dim3 grid, dim3 block,
                   size_t shared_bytes, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = overlap && programmatic_launch_enabled() ? 1 : 0;
  const cudaError_t status = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // cleared, so a later launch check does not report this failure again
    fail("CUDA kernel launch {} failed (grid {}x{}x{}, block {}x{}x{}, {} bytes of shared memory): {} ({})", name,
         grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, cudaGetErrorName(status),
         cudaGetErrorString(status));
  }
}

// launch_kernel with overlap: the usual launch of a kernel that begins with begin_after_producer().
template <typename... Params, typename... Args>
void launch_after_producer(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                           cudaStream_t stream, Args&&... args) {
  launch_kernel(name, true, kernel, grid, block, shared_bytes, stream, std::forward<Args>(args)...);
}

// Lets `kernel` be launched with `shared_bytes` of dynamic shared memory: past 48 KB a kernel must opt in first.
// Cheap enough to call before every launch (a host-side attribute, captured by nothing).
template <typename... Params>
void allow_dynamic_shared(void (*kernel)(Params...), size_t shared_bytes) {
  const cudaError_t status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    fail("CUDA kernel opt-in to {} bytes of dynamic shared memory failed: {} ({})", shared_bytes,
         cudaGetErrorName(status), cudaGetErrorString(status));
  }
}

}  // namespace ddpx
