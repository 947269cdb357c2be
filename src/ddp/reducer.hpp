// Reducer: averages the flat gradient buffer over ranks, bucket by bucket, as the backward pass makes it final.
// Contract with the model (it knows nothing else of the model):
//  - begin_step(sync, compute_stream) opens a step. sync=false is an accumulation micro-batch (PyTorch's
//    no_sync): spans are still checked, nothing is communicated and the buffer is left as the model wrote it.
//  - mark_ready(begin, end) says grad_buffer[begin, end) is final for this step. Spans arrive in buffer order
//    (= backward order), each element at most once per step; gaps that hold no tensor (padding) are fine.
//  - finish_step() launches what is left and completes the step: CPU, the averaged gradients are in the buffer
//    when it returns; CUDA, the compute stream waits for them (no host sync) — the optimizer can be enqueued.
// Guarantees:
//  - With overlap, a bucket's hook is launched as soon as all its tensors are final (buckets in order: a bucket
//    never starts before the ones before it). Without overlap every bucket is launched in finish_step() (the
//    seed's bucket_cap_mb=2000 behaviour, with any plan).
//  - Misuse is a ddpx::Error saying what happened and what to do: a span marked twice or out of order, a step
//    ending with tensors never marked, begin/mark/finish out of sequence, a hook's failure (bucket and step).
//  - On CUDA, begin/mark/finish never synchronize the host, so a synchronized step can be captured in a CUDA graph
//    once every hook has run one eager step.
//  - With a bounded watchdog (ReducerOptions::watchdog, always present: CommWatchdog::unbounded(), which never
//    fires, unless the caller gives its job's), each synchronized step's communication is watched from its first launch (see watchdog.hpp),
//    a replayed CUDA graph's from after_replay(); host (CPU) buckets re-arm it at every launch, and it only counts
//    time with a collective in flight, so a long backward pass between two buckets is never a timeout. Once it has
//    fired, begin_step, finish_step and before_replay throw its message; so do mark_ready and finish_step when a
//    collective fails because the watchdog aborted the communicator (the timeout is the cause worth reporting, not
//    the aborted call).
//  - The reducer owns the hook and (CUDA, if not given one) the communication stream; the communicator and the
//    gradient buffer must outlive it. The watchdog may be destroyed before or after it (the reducer never
//    touches it on destruction; its probe then reports a finished step as complete and a step cut short, say
//    by an exception, with its real progress, so that one still times out). Not thread-safe: one caller thread.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "comm_plan/bucket_plan.hpp"
#include "ddp/bucket_launcher.hpp"
#include "ddp/bucket_timing.hpp"
#include "ddp/bucket_view.hpp"
#include "ddp/comm_hook.hpp"
#include "dist/communicator.hpp"
#include "dist/watchdog.hpp"

namespace ddpx {

struct ReducerOptions {
  bool overlap = true;
  GradDevice device = GradDevice::cpu;
  void* comm_stream = nullptr;          // CUDA: the stream hooks run on; nullptr: the reducer creates one
  // --comm-timeout's (the job's); by default CommWatchdog::unbounded(), which never fires. Never null.
  std::reference_wrapper<CommWatchdog> watchdog = CommWatchdog::unbounded();
  AfterReduce after_reduce;             // optional: runs on each bucket once reduced (bucket_launcher.hpp)
};

class Reducer {
 public:
  Reducer(Communicator& comm, float* grad_buffer, size_t buffer_elems, std::vector<GradTensor> tensors,
          BucketPlan plan, std::unique_ptr<CommHook> hook, ReducerOptions options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  void begin_step(bool sync, void* compute_stream = nullptr);
  void mark_ready(size_t begin, size_t end);
  void finish_step();

  // CUDA graph replays of a whole captured synchronized step (the trainer calls neither begin/mark/finish then):
  //   reducer.before_replay();                    // throws the watchdog's error if it fired (the communicator
  //   cudaGraphLaunch(step_graph, compute_stream); //  is aborted: the graph's collectives must not run again)
  //   reducer.after_replay(compute_stream);       // records the replay's end on compute_stream and arms the
  //                                               //  watchdog on it; counts one synchronized step
  // A stalled collective inside the replay then times out like an eager one ("... in step S"; the bucket is
  // unknown inside a graph). No host synchronization; without a watchdog both only check the call sequence.
  // A step captured with begin/mark/finish is not counted by finish_step(): it runs, and counts, at its replays.
  void before_replay();
  void after_replay(void* compute_stream);

  const BucketPlan& plan() const { return plan_; }
  const CommHook& hook() const { return *hook_; }
  int64_t synchronized_steps() const { return synchronized_steps_; }
  // Per bucket of the last synchronized step (CUDA: waits for that step's events; empty when that step recorded
  // no ready times).
  std::vector<BucketTiming> bucket_timings() { return launcher_->timings(); }
  // CUDA: whether the next steps (or the graph replayed next) record bucket ready times; they cost the compute
  // stream a node per bucket (see Note [Bucket ready times cost a graph node]). On by default.
  void set_ready_timing(bool on) { launcher_->set_ready_timing(on); }
  // Whether the steps launched from now on run ReducerOptions::after_reduce on each reduced bucket (on by default).
  // Off for a step whose caller applies the optimizer itself after finish_step() (the trainer's calibration
  // steps, Note [Calibration steps] in train/calibration.hpp). CUDA: read when a bucket is enqueued (or captured).
  void set_after_reduce(bool on) { after_reduce_on_->store(on); }

 private:
  void launch_ready_buckets();
  void launch(size_t bucket_index);
  void arm_watchdog();
  [[noreturn]] void fail_unmarked();

  Communicator& comm_;
  float* grad_buffer_;
  size_t buffer_elems_;
  BucketPlan plan_;
  std::unique_ptr<CommHook> hook_;
  ReducerOptions options_;
  CommWatchdog& watchdog_;  // options_.watchdog: always present, never asked about
  std::vector<BucketView> views_;
  // Shared with the after-reduce wrapper the launcher holds (its thread may read it on the CPU).
  std::shared_ptr<std::atomic<bool>> after_reduce_on_ = std::make_shared<std::atomic<bool>>(true);
  std::unique_ptr<BucketLauncher> launcher_;  // declared after hook_ and views_: stopped before they go

  // What the watchdog's probe reads; the destructor replaces the launcher by its last progress, so a probe
  // outliving the reducer (the watchdog is not ours) never reads freed memory.
  struct ProbeTarget {
    std::mutex mutex;
    BucketLauncher* launcher = nullptr;
    CommProgress last_progress{true, -1};
  };
  std::shared_ptr<ProbeTarget> probe_target_ = std::make_shared<ProbeTarget>();

  bool in_step_ = false;
  bool sync_ = false;
  int64_t synchronized_steps_ = 0;  // also the index of the current synchronized step
  size_t marked_end_ = 0;           // every element below is marked (or padding)
  std::vector<size_t> tensor_marked_;  // elements marked per tensor
  std::vector<size_t> bucket_marked_;  // tensor elements marked per bucket
  size_t next_launch_ = 0;             // first bucket not launched
};

}  // namespace ddpx
