// CUDA launcher: compute -> comm stream dependencies by events; hooks enqueued on the comm stream.
// Dependency events (timing disabled) are recorded plainly, so under stream capture they become graph edges;
// timing events are recorded with cudaEventRecordExternal while the stream is being captured (the flag is
// refused outside capture), so they stay real event nodes in the graph and timings() reads replayed steps too.
//
// Note [Bucket ready times cost a graph node]
// A bucket's ready time is an event on the compute stream, between two backward kernels. Inside a CUDA graph
// that is an event-record node in the compute chain, and each one costs the chain a few microseconds: with the
// 49 buckets of ViT-L/32 at 25 MB they slowed a bf16 step by 4% at world 1 (95.2 against 99.2 steps/s; without
// them 98.8, on one H200, 2026-12-01, bench/ddp-overhead.sh). The start and end events sit on the
// communication stream, off the compute chain, and stay in every step (the watchdog reads the end events).
// So ready times are recorded only in the steps the trainer samples (set_ready_timing): eager steps at
// progress lines, and a second graph per input parity that the trainer replays at those steps
// (train/step_graphs.hpp). Steps without them report no bucket timings.
#include <cuda_runtime.h>

#include <atomic>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "ddp/bucket_launcher.hpp"

namespace ddpx {
namespace {

// Records a timing event: an event node when `stream` is being captured, a plain record otherwise.
void record_timing(cudaEvent_t event, cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  DDPX_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  const unsigned flags = capture == cudaStreamCaptureStatusActive ? cudaEventRecordExternal : cudaEventRecordDefault;
  DDPX_CUDA_CHECK(cudaEventRecordWithFlags(event, stream, flags));
}

cudaEvent_t new_event(unsigned flags) {
  cudaEvent_t event = nullptr;
  DDPX_CUDA_CHECK(cudaEventCreateWithFlags(&event, flags));
  return event;
}

class CudaBucketLauncher : public BucketLauncher {
 public:
  CudaBucketLauncher(CommHook& hook, Communicator& comm, size_t num_buckets, void* comm_stream,
                     AfterReduce after_reduce, std::shared_ptr<const std::atomic<bool>> after_reduce_on)
      : hook_(hook), comm_(comm), after_reduce_(std::move(after_reduce)),
        after_reduce_on_(std::move(after_reduce_on)), comm_stream_(static_cast<cudaStream_t>(comm_stream)) {
    DDPX_CUDA_CHECK(cudaGetDevice(&device_));
    if (!comm_stream_) {
      DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
      owns_stream_ = true;
    }
    step_begin_ = new_event(cudaEventDefault);
    done_ = new_event(cudaEventDisableTiming);
    buckets_.resize(num_buckets);
    for (BucketEvents& events : buckets_) {
      events.ready_dependency = new_event(cudaEventDisableTiming);
      events.ready = new_event(cudaEventDefault);
      events.start = new_event(cudaEventDefault);
      events.end = new_event(cudaEventDefault);
    }
  }

  ~CudaBucketLauncher() override {
    for (BucketEvents& events : buckets_)
      for (cudaEvent_t event : {events.ready_dependency, events.ready, events.start, events.end})
        cudaEventDestroy(event);
    cudaEventDestroy(step_begin_);
    cudaEventDestroy(done_);
    if (owns_stream_) cudaStreamDestroy(comm_stream_);
  }

  void begin_step(int64_t, void* compute_stream) override {
    compute_stream_ = static_cast<cudaStream_t>(compute_stream);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    DDPX_CUDA_CHECK(cudaStreamIsCapturing(compute_stream_, &capture));
    capturing_ = capture == cudaStreamCaptureStatusActive;
    launched_.clear();
    done_recorded_ = false;
    replay_ = false;
    launched_count_ = 0;
    record_timing(step_begin_, compute_stream_);
  }

  void launch(BucketView& bucket, int64_t step) override {
    BucketEvents& events = buckets_[bucket.index];
    events.wire_bytes = hook_.wire_bytes(bucket, step);
    // The ready time first: in a graph the communication branch then depends on its node, so ready <= start.
    if (ready_timing_) record_timing(events.ready, compute_stream_);
    DDPX_CUDA_CHECK(cudaEventRecord(events.ready_dependency, compute_stream_));
    DDPX_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, events.ready_dependency, 0));
    record_timing(events.start, comm_stream_);
    try {
      // Note [Widening fused into the update] (ddp/comm_hook.hpp): with a consumer, a hook that can leaves the
      // average in its wire buffer and the consumer reads it there.
      const bool consumer = after_reduce_ && (!after_reduce_on_ || after_reduce_on_->load());
      if (consumer && hook_.leaves_result_on_wire(bucket)) {
        const ReducedGradients wire = hook_.run_leaving_wire(bucket, comm_, comm_stream_, step);
        after_reduce_(bucket.begin, bucket.end, comm_stream_, &wire);
      } else {
        hook_.run(bucket, comm_, comm_stream_, step);
        if (consumer) after_reduce_(bucket.begin, bucket.end, comm_stream_, nullptr);
      }
    } catch (const std::exception& e) {
      fail("communication hook '{}' failed in bucket {} of step {}: {}", hook_.name(), bucket.index, step, e.what());
    }
    record_timing(events.end, comm_stream_);
    launched_.push_back(&bucket);
    ++launched_count_;
  }

  void finish_step() override {
    try {
      hook_.finish_step(comm_stream_);
    } catch (const std::exception& e) {
      fail("communication hook '{}' failed at the end of a step: {}", hook_.name(), e.what());
    }
    DDPX_CUDA_CHECK(cudaEventRecord(done_, comm_stream_));
    DDPX_CUDA_CHECK(cudaStreamWaitEvent(compute_stream_, done_, 0));
    done_recorded_ = true;
  }

  // A plain record after the graph launch: the event is pending from here until the replay's work is done (the
  // bucket events inside the graph keep their previous replay's state until their nodes run, so they cannot
  // tell which bucket a replay is in).
  void watch_replay(void* compute_stream) override {
    DDPX_CUDA_CHECK(cudaEventRecord(done_, static_cast<cudaStream_t>(compute_stream)));
    replay_ = true;  // before capturing_ goes false: a poll in between must not query the captured bucket events
    done_recorded_ = true;
    capturing_ = false;
  }

  bool capturing() const override { return capturing_; }

  void set_ready_timing(bool on) override { ready_timing_ = on; }

  CommProgress progress() const override {
    // The watchdog's thread starts on device 0: querying our events there would create a context on GPU 0 in
    // every rank (about 0.5 GiB each). The current device is per thread, so setting it here is enough.
    if (cudaSetDevice(device_) != cudaSuccess) return {false, -1};
    // A step being captured into a graph communicates nothing now (its replays are watched through
    // watch_replay), and its events may not even be queried (cudaErrorCapturedEvent): complete.
    if (capturing_) return {true, -1};
    if (!done_recorded_) return {false, first_incomplete_bucket()};
    if (cudaEventQuery(done_) == cudaSuccess) return {true, -1};
    return {false, replay_ ? -1 : first_incomplete_bucket()};
  }

  std::vector<BucketTiming> timings() override {
    std::vector<BucketTiming> result;
    if (launched_.empty() || !ready_timing_) return result;
    DDPX_CUDA_CHECK(cudaEventSynchronize(buckets_[launched_.back()->index].end));
    for (const BucketView* bucket : launched_) {
      const BucketEvents& events = buckets_[bucket->index];
      BucketTiming timing{bucket->index, bucket->numel(), events.wire_bytes, 0, 0, 0};
      float ms = 0;
      DDPX_CUDA_CHECK(cudaEventElapsedTime(&ms, step_begin_, events.ready));
      timing.ready_ms = ms;
      DDPX_CUDA_CHECK(cudaEventElapsedTime(&ms, step_begin_, events.start));
      timing.start_ms = ms;
      DDPX_CUDA_CHECK(cudaEventElapsedTime(&ms, step_begin_, events.end));
      timing.end_ms = ms;
      result.push_back(timing);
    }
    return result;
  }

 private:
  struct BucketEvents {
    cudaEvent_t ready_dependency = nullptr, ready = nullptr, start = nullptr, end = nullptr;
    size_t wire_bytes = 0;  // the hook's, at the bucket's last launch (or capture)
  };

  // Called from the watchdog thread: only atomics and event queries.
  int64_t first_incomplete_bucket() const {
    const size_t launched = launched_count_.load();
    for (size_t b = 0; b < launched && b < buckets_.size(); ++b)
      if (cudaEventQuery(buckets_[b].end) != cudaSuccess) return static_cast<int64_t>(b);
    return static_cast<int64_t>(launched);
  }

  CommHook& hook_;
  Communicator& comm_;
  AfterReduce after_reduce_;
  std::shared_ptr<const std::atomic<bool>> after_reduce_on_;  // nullptr: always on
  cudaStream_t comm_stream_ = nullptr;
  int device_ = 0;  // the device of the streams and events (the watchdog thread selects it before probing)
  bool owns_stream_ = false;
  cudaStream_t compute_stream_ = nullptr;
  cudaEvent_t step_begin_ = nullptr, done_ = nullptr;
  std::vector<BucketEvents> buckets_;
  std::vector<BucketView*> launched_;
  std::atomic<size_t> launched_count_{0};
  std::atomic<bool> done_recorded_{false};
  std::atomic<bool> replay_{false};     // done_ was recorded by watch_replay()
  std::atomic<bool> capturing_{false};  // the open step is being captured into a CUDA graph
  bool ready_timing_ = true;            // this step (eager, or the graph replayed) records ready times
};

}  // namespace

std::unique_ptr<BucketLauncher> make_cuda_launcher(CommHook& hook, Communicator& comm, size_t num_buckets,
                                                   void* comm_stream, AfterReduce after_reduce,
                                                   std::shared_ptr<const std::atomic<bool>> after_reduce_on) {
  return std::make_unique<CudaBucketLauncher>(hook, comm, num_buckets, comm_stream, std::move(after_reduce),
                                              std::move(after_reduce_on));
}

}  // namespace ddpx
