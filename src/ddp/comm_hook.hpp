// CommHook: what happens to one bucket of gradients between "final on this rank" and "averaged over all ranks".
// Guarantees every hook keeps:
//  - run() leaves the AVERAGE over ranks (or a documented approximation of it) in the bucket, in place.
//  - run() is called for every bucket of a synchronized step in bucket order, with the same spans every step;
//    on CPU from the reducer's communication thread, on CUDA from the caller's thread with `stream` the
//    communication stream: all device work is enqueued there and nothing waits on the host, except the first
//    call for a bucket, which may allocate (so capture CUDA graphs after one eager step).
//  - `step` counts synchronized steps from 0 (hooks that change behaviour over time key on it).
// The hooks themselves and their factory (the --comm-hook spec) are in ddp/comm_hook_factory.hpp: this interface
// imports no implementation.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "ddp/bucket_view.hpp"
#include "dist/communicator.hpp"

namespace ddpx {

class CommHook {
 public:
  virtual ~CommHook() = default;
  virtual std::string name() const = 0;
  virtual void run(BucketView& bucket, Communicator& comm, void* stream, int64_t step) = 0;
  // The first synchronized step from which run() enqueues the same device work every step, allocating and
  // synchronizing nothing: a step from here on may be captured into a CUDA graph and replayed for all later ones.
  // kNeverCapturable: never (the work changes every step).
  static constexpr int64_t kNeverCapturable = std::numeric_limits<int64_t>::max();
  virtual int64_t capturable_from_step() const { return 1; }
};

}  // namespace ddpx
