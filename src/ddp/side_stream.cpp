// SideStream: a non-blocking stream and two timing-free events; in CPU-only builds only join() works (a no-op).
#include "ddp/side_stream.hpp"

#include "core/error.hpp"
#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#endif

namespace ddpx {

#ifdef DDPX_HAVE_CUDA
namespace {
cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }
cudaEvent_t as_event(void* event) { return static_cast<cudaEvent_t>(event); }
}  // namespace

SideStream::~SideStream() {
  if (forked_) cudaEventDestroy(as_event(forked_));
  if (done_) cudaEventDestroy(as_event(done_));
  if (stream_) cudaStreamDestroy(as_stream(stream_));
}

void* SideStream::fork(void* from) {
  if (!stream_) {
    cudaStream_t stream = nullptr;
    cudaEvent_t forked = nullptr, done = nullptr;
    DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    stream_ = stream;
    DDPX_CUDA_CHECK(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
    forked_ = forked;
    DDPX_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    done_ = done;
  }
  DDPX_CUDA_CHECK(cudaEventRecord(as_event(forked_), as_stream(from)));
  DDPX_CUDA_CHECK(cudaStreamWaitEvent(as_stream(stream_), as_event(forked_), 0));
  pending_ = true;
  return stream_;
}

void SideStream::join(void* into) {
  if (!pending_) return;
  DDPX_CUDA_CHECK(cudaEventRecord(as_event(done_), as_stream(stream_)));
  DDPX_CUDA_CHECK(cudaStreamWaitEvent(as_stream(into), as_event(done_), 0));
  pending_ = false;
}
#else
SideStream::~SideStream() = default;

void* SideStream::fork(void*) {
  fail("a second CUDA stream was requested, but this ddpx was built without CUDA");
}

void SideStream::join(void*) {}
#endif

}  // namespace ddpx
