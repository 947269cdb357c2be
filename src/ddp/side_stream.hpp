// SideStream: a second CUDA stream for work that may run beside a hook's chain on its own stream, joined back
// into that stream once per step (Note [Q's orthogonalization beside the hook's chain], ddp/powersgd_hook.cpp).
// Guarantees:
//  - fork(from) returns a stream whose next work runs after everything enqueued on `from` so far; the stream
//    and its events are created on the first call (which must not be under stream capture).
//  - join(into) makes `into` wait for everything forked since the last join, and does nothing when nothing was:
//    under capture every fork is then joined in the same captured step, as CUDA requires.
//  - CPU-only builds: fork() is an error naming the caller's need; join() does nothing.
#pragma once

namespace ddpx {

class SideStream {
 public:
  SideStream() = default;
  ~SideStream();
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

  void* fork(void* from);
  void join(void* into);
  bool pending() const { return pending_; }  // forked since the last join

 private:
  void* stream_ = nullptr;  // cudaStream_t
  void* forked_ = nullptr;  // cudaEvent_t on `from`, waited for by the side stream
  void* done_ = nullptr;    // cudaEvent_t on the side stream, waited for by `into`
  bool pending_ = false;
};

}  // namespace ddpx
