// Reducer: readiness bookkeeping per tensor and bucket; launching is the BucketLauncher's.
#include "ddp/reducer.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace ddpx {

Reducer::~Reducer() {
  std::lock_guard lock(probe_target_->mutex);
  // A finished step counts as complete; one cut short (an exception mid-step) keeps its real progress.
  probe_target_->last_progress = in_step_ ? launcher_->progress() : CommProgress{true, -1};
  probe_target_->launcher = nullptr;
}

Reducer::Reducer(Communicator& comm, float* grad_buffer, size_t buffer_elems, std::vector<GradTensor> tensors,
                 BucketPlan plan, std::unique_ptr<CommHook> hook, ReducerOptions options)
    : comm_(comm),
      grad_buffer_(grad_buffer),
      buffer_elems_(buffer_elems),
      plan_(std::move(plan)),
      hook_(std::move(hook)),
      options_(options),
      watchdog_(options.watchdog) {
  DDPX_REQUIRE(grad_buffer_ != nullptr, "Reducer: the gradient buffer is null");
  DDPX_REQUIRE(hook_ != nullptr, "Reducer: no communication hook given (use make_comm_hook(\"allreduce\"))");
  DDPX_REQUIRE(plan_.size() > 0 && plan_.tensors() == tensors,
               "Reducer: the bucket plan was built from another tensor list than the one given; build it with "
               "BucketPlan(tensors, options) from the same list");
  DDPX_REQUIRE(plan_.buckets().back().end <= buffer_elems_,
               "Reducer: the tensors reach element {} but the gradient buffer holds only {}",
               plan_.buckets().back().end, buffer_elems_);
  const bool wants_device_memory = options_.device == GradDevice::cuda;
  DDPX_REQUIRE(wants_device_memory == (comm_.buffer_memory() == BufferMemory::cuda),
               "Reducer: the gradients are in {} memory but the '{}' backend communicates {} buffers; use "
               "--backend {} for {} training", wants_device_memory ? "GPU" : "host", comm_.backend_name(),
               comm_.buffer_memory() == BufferMemory::cuda ? "GPU" : "host", wants_device_memory ? "nccl" : "mpi",
               wants_device_memory ? "GPU" : "CPU");

  for (size_t b = 0; b < plan_.size(); ++b) {
    const Bucket& bucket = plan_[b];
    std::span<const GradTensor> bucket_tensors(plan_.tensors().data() + bucket.first_tensor,
                                               bucket.end_tensor - bucket.first_tensor);
    views_.push_back({b, grad_buffer_ + bucket.begin, bucket.begin, bucket.end, bucket_tensors, options_.device});
  }
  tensor_marked_.assign(plan_.tensors().size(), 0);
  bucket_marked_.assign(plan_.size(), 0);
  if (options_.device == GradDevice::cpu) {
    AfterReduce after_reduce;
    if (options_.after_reduce)
      after_reduce = [on = after_reduce_on_, call = options_.after_reduce](size_t begin, size_t end, void* stream,
                                                                           const ReducedGradients* wire) {
        if (on->load()) call(begin, end, stream, wire);
      };
    launcher_ = make_host_launcher(*hook_, comm_, std::move(after_reduce));
  } else {
#ifdef DDPX_HAVE_CUDA
    // The CUDA launcher reads the switch itself: it must know before the hook runs whether a consumer will take
    // the result from the wire (Note [Widening fused into the update]).
    launcher_ = make_cuda_launcher(*hook_, comm_, plan_.size(), options_.comm_stream, options_.after_reduce,
                                   after_reduce_on_);
#else
    fail("Reducer: GPU gradients need a CUDA build of ddpx");
#endif
  }
  probe_target_->launcher = launcher_.get();
}

void Reducer::begin_step(bool sync, void* compute_stream) {
  DDPX_REQUIRE(!in_step_, "Reducer::begin_step() called again before finish_step() of the open step: every step "
                          "is begin_step, mark_ready for each span, finish_step");
  watchdog_.throw_if_fired();
  in_step_ = true;
  sync_ = sync;
  marked_end_ = 0;
  next_launch_ = 0;
  std::fill(tensor_marked_.begin(), tensor_marked_.end(), 0);
  std::fill(bucket_marked_.begin(), bucket_marked_.end(), 0);
  if (sync_) launcher_->begin_step(synchronized_steps_, compute_stream);
}

void Reducer::mark_ready(size_t begin, size_t end) {
  DDPX_REQUIRE(in_step_, "Reducer::mark_ready({}, {}) outside a step: call begin_step() first", begin, end);
  DDPX_REQUIRE(begin < end && end <= buffer_elems_,
               "Reducer::mark_ready({}, {}): the span is empty or outside the gradient buffer of {} elements",
               begin, end, buffer_elems_);
  const std::vector<GradTensor>& tensors = plan_.tensors();
  // First tensor that ends after `begin` (tensors are sorted and disjoint, so their ends are sorted too).
  size_t t = static_cast<size_t>(
      std::partition_point(tensors.begin(), tensors.end(),
                           [begin](const GradTensor& x) { return x.offset + x.numel <= begin; }) -
      tensors.begin());
  if (begin < marked_end_) {
    std::string tensor = t < tensors.size() ? " (tensor '" + tensors[t].name + "')" : "";
    fail("gradient span [{}, {}){} was marked ready twice in this step, or out of buffer order: elements below {} "
         "were already final. Report each span once per step, in buffer (backward) order; a parameter used "
         "several times in the forward pass is still reported once, after its last gradient is accumulated",
         begin, end, tensor, marked_end_);
  }
  marked_end_ = end;
  for (; t < tensors.size() && tensors[t].offset < end; ++t) {
    const size_t covered_begin = std::max(begin, tensors[t].offset);
    const size_t covered_end = std::min(end, tensors[t].offset + tensors[t].numel);
    tensor_marked_[t] += covered_end - covered_begin;
    bucket_marked_[plan_.bucket_of_tensor(t)] += covered_end - covered_begin;
  }
  if (sync_ && options_.overlap) launch_ready_buckets();
}

void Reducer::launch_ready_buckets() {
  while (next_launch_ < plan_.size() && bucket_marked_[next_launch_] == plan_[next_launch_].tensor_elements)
    launch(next_launch_++);
}

void Reducer::arm_watchdog() {
  watchdog_.arm(synchronized_steps_, [target = probe_target_] {
    std::lock_guard lock(target->mutex);
    return target->launcher ? target->launcher->progress() : target->last_progress;
  });
}

void Reducer::launch(size_t bucket_index) {
  // GPU buckets: one deadline per step from its first launch (the host runs ahead of the device). Host buckets:
  // a deadline per launch, so only time with a collective in flight counts, never the compute around it.
  if (bucket_index == 0 || options_.device == GradDevice::cpu) arm_watchdog();
  try {
    launcher_->launch(views_[bucket_index], synchronized_steps_);
  } catch (...) {
    watchdog_.throw_if_fired();  // a call on the aborted communicator failed
    throw;
  }
}

void Reducer::before_replay() {
  DDPX_REQUIRE(!in_step_, "Reducer::before_replay() inside an open step: replay a captured step between "
                          "finish_step() and the next begin_step()");
  DDPX_REQUIRE(options_.device == GradDevice::cuda, "Reducer: CUDA graph replays need GPU gradients (--device cuda)");
  watchdog_.throw_if_fired();
}

void Reducer::after_replay(void* compute_stream) {
  DDPX_REQUIRE(!in_step_, "Reducer::after_replay() inside an open step: replay a captured step between "
                          "finish_step() and the next begin_step()");
  launcher_->watch_replay(compute_stream);
  arm_watchdog();
  ++synchronized_steps_;
}

void Reducer::fail_unmarked() {
  const std::vector<GradTensor>& tensors = plan_.tensors();
  std::string names;
  size_t unmarked = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (tensor_marked_[t] == tensors[t].numel) continue;
    if (++unmarked <= 3)
      names += fmt::format("{}'{}' ({} of {} elements marked)", names.empty() ? "" : ", ", tensors[t].name,
                           tensor_marked_[t], tensors[t].numel);
  }
  fail("the step ended before every gradient was marked ready: {}{}. Every tensor of the gradient buffer must be "
       "reported through mark_ready once per step, even one that got no gradient in this step (PyTorch's "
       "find_unused_parameters case): leave its gradient zero and mark its span",
       names, unmarked > 3 ? fmt::format(" and {} more", unmarked - 3) : "");
}

void Reducer::finish_step() {
  DDPX_REQUIRE(in_step_, "Reducer::finish_step() without an open step: call begin_step() first");
  in_step_ = false;
  watchdog_.throw_if_fired();
  bool all_marked = true;
  for (size_t b = 0; b < plan_.size(); ++b) all_marked = all_marked && bucket_marked_[b] == plan_[b].tensor_elements;
  if (!all_marked) {
    if (sync_ && next_launch_ > 0) {
      try {
        launcher_->finish_step();  // let the buckets already launched complete before reporting
      } catch (const Error&) {
      }
    }
    fail_unmarked();
  }
  if (!sync_) return;
  while (next_launch_ < plan_.size()) launch(next_launch_++);
  try {
    launcher_->finish_step();
  } catch (...) {
    if (options_.device == GradDevice::cpu) watchdog_.disarm();
    watchdog_.throw_if_fired();
    throw;
  }
  if (options_.device == GradDevice::cpu) watchdog_.disarm();
  // A captured step runs at its replays: after_replay() counts it then (the trainer replays it at once).
  if (!launcher_->capturing()) ++synchronized_steps_;
}

}  // namespace ddpx
