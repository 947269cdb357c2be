// BucketLauncher: where and when a ready bucket's hook runs, and how a step's communication completes.
// Two implementations, chosen by the reducer from its device:
//  - host (host_bucket_launcher.cpp): one communication thread per reducer runs hooks in launch order, so the
//    caller's backward pass overlaps the collectives; finish_step() waits for it and rethrows a hook's error.
//  - CUDA (cuda_bucket_launcher.cpp): launch() records an event on the compute stream, the communication stream
//    waits on it and the hook is enqueued there; finish_step() makes the compute stream wait on the
//    communication stream. No host synchronization: a whole step can be captured into a CUDA graph.
// Guarantees: launches happen in bucket order (the reducer ensures it) and every rank launches the same buckets
// in the same order, so the collectives inside hooks match across ranks. progress() is thread-safe (watchdog);
// on CUDA a step being captured into a graph reports complete (it runs nothing then; its replays are watched
// through watch_replay()).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ddp/bucket_timing.hpp"
#include "ddp/bucket_view.hpp"
#include "ddp/comm_hook.hpp"
#include "core/reduced_gradients.hpp"
#include "dist/watchdog.hpp"

namespace ddpx {

// Called once a bucket's hook has left the average in it, with the bucket's buffer span and where it is final:
// CUDA, enqueued on the communication stream (passed as `stream`) right after the hook; host, on the
// communication thread, before the bucket counts as complete (`stream` is nullptr). The trainer applies the
// optimizer to the span there (see Note [Optimizer overlapped with backward] in train/step_engine.hpp). An
// exception is reported like the hook's own failure. `wire` is nullptr when the average is in the buffer's span;
// otherwise the hook left it in its 16-bit wire buffer and the span keeps this rank's own gradients (CUDA, hooks
// that can: Note [Widening fused into the update] in ddp/comm_hook.hpp).
using AfterReduce = std::function<void(size_t begin, size_t end, void* stream, const ReducedGradients* wire)>;

class BucketLauncher {
 public:
  virtual ~BucketLauncher() = default;
  virtual void begin_step(int64_t step, void* compute_stream) = 0;
  // `bucket` must stay valid until finish_step() has returned.
  virtual void launch(BucketView& bucket, int64_t step) = 0;
  virtual void finish_step() = 0;
  // CUDA: the caller has just launched a CUDA graph holding a whole captured step on `compute_stream`; records
  // the step's completion there so that progress() reports on that replay (bucket unknown: -1). Host: an error.
  virtual void watch_replay(void* compute_stream) = 0;
  virtual CommProgress progress() const = 0;
  // The open step is being captured into a CUDA graph (it runs at its replays). Host: never.
  virtual bool capturing() const { return false; }
  // Whether the steps begun from now on record when each bucket became ready (CUDA; the host launcher always
  // does). See Note [Bucket ready times cost a graph node].
  virtual void set_ready_timing(bool /*on*/) {}
  // Per launched bucket of the last finished step; CUDA waits for that step's events (a host sync). Empty when
  // that step did not record ready times (CUDA, set_ready_timing(false)).
  virtual std::vector<BucketTiming> timings() = 0;
};

// after_reduce may be empty.
std::unique_ptr<BucketLauncher> make_host_launcher(CommHook& hook, Communicator& comm, AfterReduce after_reduce = {});
// Defined in CUDA builds only (cuda_bucket_launcher.cpp); declared in every build so that this header reads the same
// in every translation unit. Callers are compiled under DDPX_HAVE_CUDA (the Reducer is the one in ddpx).
// comm_stream: nullptr makes the launcher create (and own) a non-blocking stream. after_reduce runs for the
// buckets launched while *after_reduce_on is true (read at each launch); with it, a hook that can leaves its
// result on the wire for it.
std::unique_ptr<BucketLauncher> make_cuda_launcher(CommHook& hook, Communicator& comm, size_t num_buckets,
                                                   void* comm_stream, AfterReduce after_reduce = {},
                                                   std::shared_ptr<const std::atomic<bool>> after_reduce_on = {});

}  // namespace ddpx
