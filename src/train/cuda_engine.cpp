// CudaEngine: a model's CUDA form (model_cuda/cuda_models.hpp: the ViT's or the MLP's CudaModel) with a copy stream, double-buffered device inputs, pinned host
// batches, CUDA-event phase timing and whole-step CUDA graphs, as a StepEngine.
// Guarantees:
//  - Host->device copies run on their own stream into input buffer (micro-batch parity); the compute stream waits
//    on the copy's event, and the copy of the next micro-batch waits until the compute stream has consumed the
//    buffer it overwrites. No host synchronization in the step except batch_consumed() (waits for the copy of
//    that batch only, so the pinned slot can be refilled) and last_loss().
//  - Phase times come from CUDA events: eager steps read a ring entry two steps old (never stalls); graph steps
//    read the event nodes of the other parity's graph, i.e. the previous step (waits for that step at most).
//    Each carries the step it is of, and when that step began on the GPU in host steady_clock time: its first
//    event's elapsed time from one reference event recorded at start on an idle GPU, whose host time is bracketed
//    by host clock reads (see Note [One clock for all ranks]). cudaEventElapsedTime is a float of milliseconds,
//    so that start is resolved to ~2^-24 of the time since the reference (60 us after 1000 s).
//  - Numerics (train/numerics_guard.hpp) are checked every step on the device: the optimizer kernel notes any
//    non-finite gradient in the same pass and one single-thread kernel folds in the loss (kernels/
//    numerics_check.hpp); both are captured with the step. numerics_problem() reads the flag (synchronizes).
//  - CUDA graphs: capture_begin()/capture_end() around one whole step (zero grads, forward, backward, reducer,
//    optimizer); two graphs (plain, timed) per input parity; replay() launches one. Both variants of a parity
//    record their phase events into the same events, so those hold the last replay of that parity. The optimizer's step number is frozen in the
//    graph, so the trainer only captures where that is exact (OptimizerSpec::graph_replay_exact, after step 1).
//  - The recipe (train/recipe_options.hpp; verified against the CPU engine on an H100, 2026-12-05) runs the CPU
//    engine's steps in the same order with kernels/recipe.hpp: mixup/cutmix drawn on the host from the batch's
//    index and applied on the compute stream (so no graph replays such a step: step_graphs.hpp), the soft-target
//    loss, the global-norm clip after the reduction and before the update (no host sync; the norm is read only
//    when asked), the --no-decay tensors updated with weight decay 0, and the weight EMA after each update.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstring>

#include "core/error.hpp"
#include "core/cuda_check.hpp"
#include "core/internal_assert.hpp"
#include "model/precision.hpp"
#include "model_cuda/cuda_models.hpp"
#include "model_cuda/device_buffer.hpp"
#include "kernels/normalize_pixels.hpp"
#include "kernels/numerics_check.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/recipe.hpp"
#include "kernels/synthetic_data.hpp"
#include "core/rng.hpp"
#include "data/batch_mixing.hpp"
#include "model/no_decay.hpp"
#include "train/graph_capture.hpp"
#include "train/step_engine.hpp"

namespace ddpx {
namespace {

constexpr int kEventRing = 4;

// The step's events on the compute stream, in order. Zeroing the gradients (between kStepStart and kGradsZeroed)
// counts as optimizer time, as PyTorch's optimizer.zero_grad(); the input copy wait is kGradsZeroed..kCopyDone.
enum PhaseEvent {
  kStepStart, kGradsZeroed, kCopyDone, kForwardEnd, kBackwardEnd, kOptimizerStart, kStepEnd, kNumPhaseEvents
};

class CudaEngine : public StepEngine, public GraphCapture {
 public:
  CudaEngine(const Model& model, const EngineOptions& options, int device, int rank)
      : layout_(model.layout()),
        image_numel_(model.input_shape().numel()),
        classes_(model.num_classes()),
        input_shape_(model.input_shape()),
        options_(options),
        device_(device),
        rank_(rank) {
    int count = 0;
    DDPX_REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess && count > 0,
                 "--device cuda: no CUDA GPU is visible here (cudaGetDeviceCount found none); use --device cpu");
    DDPX_REQUIRE(device < count, "rank with local rank {} needs GPU {}, but only {} GPU(s) are visible", device,
                 device, count);
    DDPX_CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    DDPX_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    device_name_ = prop.name;
    DDPX_CUDA_CHECK(cudaFree(nullptr));  // create the context, then take the baseline
    size_t free_bytes = 0, total_bytes = 0;
    DDPX_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    baseline_used_ = total_bytes - free_bytes;
    DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&update_, cudaStreamNonBlocking));
    DDPX_CUDA_CHECK(cudaEventCreateWithFlags(&span_ready_, cudaEventDisableTiming));
    DDPX_CUDA_CHECK(cudaEventCreateWithFlags(&updates_done_, cudaEventDisableTiming));
    options.optimizer.validate();
    model_ = make_cuda_model(model, options.batch, options.precision, compute_);
    if (options.bf16_weight_grads) model_->use_bf16_weight_gradients();
    for (int p = 0; p < 2; ++p) {
      images_[p] = DeviceBuffer<float>(static_cast<size_t>(options.batch * image_numel_), "input images");
      labels_[p] = DeviceBuffer<int32_t>(static_cast<size_t>(options.batch), "input labels");
      if (options.device_normalization)
        pixels_[p] = DeviceBuffer<uint8_t>(static_cast<size_t>(options.batch * image_numel_), "input pixels (uint8)");
      DDPX_CUDA_CHECK(cudaEventCreateWithFlags(&copy_done_[p], cudaEventDisableTiming));
      DDPX_CUDA_CHECK(cudaEventCreateWithFlags(&input_free_[p], cudaEventDisableTiming));
      DDPX_CUDA_CHECK(cudaEventRecord(input_free_[p], compute_));
    }
    set_up_recipe(options.recipe);
    loss_ = DeviceBuffer<float>(1, "loss");
    numerics_ = DeviceBuffer<NumericsFlag>(1, "numerics flag");
    numerics_flag_reset(numerics_.get(), compute_);
    for (auto& ring : events_)
      for (auto& e : ring) DDPX_CUDA_CHECK(cudaEventCreate(&e));
    for (auto& set : graph_events_)
      for (auto& e : set) DDPX_CUDA_CHECK(cudaEventCreate(&e));
    record_reference_event();
  }

  ~CudaEngine() override {
    cudaDeviceSynchronize();
    for (auto& variants : graphs_)
      for (cudaGraphExec_t g : variants)
        if (g) cudaGraphExecDestroy(g);
    for (int p = 0; p < 2; ++p) cudaEventDestroy(copy_done_[p]), cudaEventDestroy(input_free_[p]);
    for (auto& ring : events_)
      for (auto& e : ring) cudaEventDestroy(e);
    for (auto& set : graph_events_)
      for (auto& e : set) cudaEventDestroy(e);
    cudaEventDestroy(reference_);
    model_.reset();
    cudaEventDestroy(span_ready_);
    cudaEventDestroy(updates_done_);
    cudaStreamDestroy(update_);
    cudaStreamDestroy(copy_);
    cudaStreamDestroy(compute_);
  }

  std::string describe() const override {
    return fmt::format("cuda:{} ({}, {})", device_, device_name_, precision_name(options_.precision));
  }
  bool is_cuda() const override { return true; }
  float* grad_buffer() override { return model_->grads(); }
  void* compute_stream() override { return compute_; }
  GraphCapture* graph_capture() override { return this; }
  std::string device_name() const override { return device_name_; }  // StepEngine
  std::string pci_bus_id() const override {
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device_) != cudaSuccess) return "";  // near cores unknown
    return bus_id;
  }

  // Uploads go through the compute stream (then a sync): a plain cudaMemcpy from pageable memory may return before
  // its DMA is done, and the legacy stream it uses is not ordered with our non-blocking streams, so a kernel
  // (the bf16 cast, an update on another stream) could read the buffer early.
  void upload_params(const float* host) override {
    DDPX_CUDA_CHECK(
        cudaMemcpyAsync(model_->params(), host, layout_.buffer_size() * 4, cudaMemcpyHostToDevice, compute_));
    model_->sync_low_precision_weights();
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
  }
  void download_params(float* host) override {
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
    DDPX_CUDA_CHECK(cudaMemcpy(host, model_->params(), layout_.buffer_size() * 4, cudaMemcpyDeviceToHost));
  }
  HostOptimizerState download_optimizer_state() override {
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
    HostOptimizerState state;
    state.step = step_;
    for (const auto& [name, ptr] : optimizer_state()) {
      std::vector<float> values(layout_.buffer_size());
      DDPX_CUDA_CHECK(cudaMemcpy(values.data(), ptr, values.size() * 4, cudaMemcpyDeviceToHost));
      state.buffers.push_back({name, std::move(values)});
    }
    if (std::optional<std::vector<float>> average = weight_average()) {  // --ema-decay: checkpointed beside it
      state.weight_average = std::move(*average);
      state.weight_average_updates = ema_updates_;
    }
    return state;
  }
  void upload_optimizer_state(const HostOptimizerState& state) override {
    auto device_state = optimizer_state();
    for (const auto& [name, values] : state.buffers) {
      bool found = false;
      for (const auto& [dname, ptr] : device_state)
        if (dname == name) {
          DDPX_CUDA_CHECK(cudaMemcpyAsync(ptr, values.data(), values.size() * 4, cudaMemcpyHostToDevice, compute_));
          found = true;
        }
      DDPX_REQUIRE(found, "checkpoint optimizer state '{}' has no place in the CUDA {} optimizer", name,
                   options_.optimizer.name());
    }
    // The checkpoint bridge (train/checkpointing.cpp) refuses a resume whose --ema-decay differs from the file's.
    DDPX_INTERNAL_ASSERT(state.weight_average.empty() == (weight_average_.get() == nullptr) &&
                             (state.weight_average.empty() || state.weight_average.size() == layout_.buffer_size()),
                         "weight average of {} elements uploaded to a CUDA engine {} one",
                         state.weight_average.size(), weight_average_.get() ? "with" : "without");
    if (weight_average_.get()) {
      DDPX_CUDA_CHECK(cudaMemcpyAsync(weight_average_.get(), state.weight_average.data(),
                                      state.weight_average.size() * 4, cudaMemcpyHostToDevice, compute_));
      ema_updates_ = state.weight_average_updates;
    }
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
    step_ = state.step;
  }
  void* allocate_host_batch(size_t bytes) override {
    void* p = nullptr;
    DDPX_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
    return p;
  }
  void free_host_batch(void* p) override { cudaFreeHost(p); }

  void set_batch(const HostBatch& batch) override {
    parity_ = micro_counter_++ % 2;
    batch_size_ = batch.batch;
    batch_index_ = batch.step;
    // The buffer of this parity is free once the step that read it two micro-batches ago has run its backward.
    DDPX_CUDA_CHECK(cudaStreamWaitEvent(copy_, input_free_[parity_], 0));
    if (options_.data == DataSource::synthetic_device) {
      generate_synthetic_batch(images_[parity_].get(), labels_[parity_].get(), batch.batch,
                               image_numel_, classes_,
                               options_.seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(rank_),
                               static_cast<uint64_t>(batch.step), copy_);
    } else if (batch.pixels != nullptr) {
      // uint8 batches (--normalize device): a quarter of the float copy, normalized on the copy stream.
      DDPX_INTERNAL_ASSERT(options_.device_normalization, "a uint8 batch without --normalize device");
      const InputShape input = input_shape_;
      DDPX_CUDA_CHECK(cudaMemcpyAsync(pixels_[parity_].get(), batch.pixels,
                                      static_cast<size_t>(batch.batch * image_numel_), cudaMemcpyHostToDevice, copy_));
      normalize_pixels_on_device(pixels_[parity_].get(), batch.batch, input.image_size, input.channels,
                                 options_.normalization.mean_for(input.channels),
                                 options_.normalization.std_for(input.channels), images_[parity_].get(), copy_);
      DDPX_CUDA_CHECK(cudaMemcpyAsync(labels_[parity_].get(), batch.labels, batch.batch * sizeof(int32_t),
                                      cudaMemcpyHostToDevice, copy_));
    } else {
      DDPX_CUDA_CHECK(cudaMemcpyAsync(images_[parity_].get(), batch.images, images_[parity_].bytes(),
                                      cudaMemcpyHostToDevice, copy_));
      DDPX_CUDA_CHECK(cudaMemcpyAsync(labels_[parity_].get(), batch.labels, batch.batch * sizeof(int32_t),
                                      cudaMemcpyHostToDevice, copy_));
    }
    DDPX_CUDA_CHECK(cudaEventRecord(copy_done_[parity_], copy_));
  }
  void batch_consumed(const HostBatch&) override { DDPX_CUDA_CHECK(cudaEventSynchronize(copy_done_[parity_])); }

  void zero_grads() override {
    record(kStepStart);
    model_->zero_grads();
    record(kGradsZeroed);
  }

  void forward_backward(float grad_scale, const ReadyFn& on_ready) override {
    // Under capture the wait on the (uncaptured) copy stream is made by capture_begin()/replay() instead.
    if (!capturing_) DDPX_CUDA_CHECK(cudaStreamWaitEvent(compute_, copy_done_[parity_], 0));
    record(kCopyDone);
    const float* images = mixed_input();
    bool first_span = true;
    model_->forward_backward(images, labels_[parity_].get(), batch_size_, grad_scale, loss_.get(),
                             [&](size_t begin, size_t end) {
                               if (first_span) record(kForwardEnd), first_span = false;
                               if (on_ready) on_ready(begin, end);
                             });
    record(kBackwardEnd);
    if (!capturing_) DDPX_CUDA_CHECK(cudaEventRecord(input_free_[parity_], compute_));
  }

  void optimizer_step(int64_t step) override {
    record(kOptimizerStart);
    if (options_.recipe.clip_grad_norm != 0) {
      // After the reduction (the trainer calls this once the buckets are averaged): every rank clips alike.
      clip_grad_norm(model_->grads(), static_cast<int64_t>(layout_.buffer_size()),
                     static_cast<float>(options_.recipe.clip_grad_norm), clip_partials_.get(), clip_scalars_.get(),
                     clip_scalars_.get() + 1, compute_);
    }
    update(step, 0, layout_.buffer_size(), compute_);
    end_step(step);
  }

  // The end of optimizer step `step`, whole or span-wise, once every update is on compute_: the weight average,
  // the numerics check (every update's kernels have noted any bad gradient by then), the step's last event, and
  // which step the event ring and the checked numerics belong to.
  void end_step(int64_t step) {
    update_weight_average(step);
    numerics_check_step(numerics_.get(), loss_.get(), static_cast<float>(options_.divergence_ratio), compute_);
    record(kStepEnd);
    if (!capturing_ && first_checked_step_ == 0) first_checked_step_ = step;
    step_ = step;
    if (!capturing_) ring_step_[ring_pos_ % kEventRing] = step, ++ring_pos_;
  }

  void begin_span_updates(int64_t step) override {
    span_step_ = step;
    spans_forked_ = false;
    // Optimizer state is allocated (and zeroed on the compute stream) on first use: before any span, so no span
    // update can run ahead of that zeroing on another stream.
    for (const std::string& name : options_.optimizer.state_names()) model_->optimizer_state(name);
  }
  void optimizer_span(size_t begin, size_t end, void* stream, const ReducedGradients* wire) override {
    cudaStream_t target = static_cast<cudaStream_t>(stream);
    DDPX_INTERNAL_ASSERT(wire == nullptr || target != nullptr,
                         "span [{}, {}): 16-bit gradients come only from the reducer's stream", begin, end);
    // Note [Reduced spans updated beside the hook]
    // A span from the reducer whose averages stay put until the hook's next call for its bucket (in the bucket, or
    // a PowerSGD bucket's factors) is updated on the update stream, forked from the communication stream, so the
    // hook's next bucket does not queue behind the update; the join is finish_span_updates()'s, as for the spans
    // forked from the compute stream. A cast hook's 16-bit wire, one buffer that the next bucket overwrites, is
    // read on the communication stream itself. Measured on an H200 (ViT-L/32 bf16, powersgd:4, one device call,
    // both binaries alternated): the exposed communication fell from 1.45-1.87 to 0.73-0.74 ms and the step from
    // 12.7 to 12.4 ms (docs/results.md, 2026-12-02); the allreduce and bf16 hooks did not move.
    if (wire == nullptr || !wire->reused_by_next_bucket()) {  // every span from the compute stream, too
      DDPX_CUDA_CHECK(cudaEventRecord(span_ready_, target ? target : compute_));
      DDPX_CUDA_CHECK(cudaStreamWaitEvent(update_, span_ready_, 0));
      target = update_;
      spans_forked_ = true;
    }
    // Empty ReducedGradients: the hook left the average in the bucket after all (core/reduced_gradients.hpp).
    if (wire == nullptr || wire->in_buffer())
      return update(span_step_, begin, end, target);
    DDPX_INTERNAL_ASSERT(!options_.recipe.no_decay,
                         "span [{}, {}): --no-decay with a hook's 16-bit wire (the trainer keeps the update apart)",
                         begin, end);
    model_->optimizer_span(options_.optimizer, span_step_, begin, end, target, &numerics_.get()->step_bad_offset,
                           wire);
  }
  void finish_span_updates() override {
    record(kOptimizerStart);
    // Only a stream this step forked from the compute stream may be joined (under capture, waiting on work the
    // capture never saw is an error); the reducer's spans are joined by its own finish_step().
    if (spans_forked_) {
      DDPX_CUDA_CHECK(cudaEventRecord(updates_done_, update_));
      DDPX_CUDA_CHECK(cudaStreamWaitEvent(compute_, updates_done_, 0));
    }
    // After every span (the reducer's were joined by its finish_step): their kernels noted any bad gradient.
    end_step(span_step_);
  }

  float last_loss() override {
    float loss = 0;
    DDPX_CUDA_CHECK(cudaMemcpyAsync(&loss, loss_.get(), sizeof(float), cudaMemcpyDeviceToHost, compute_));
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
    return loss;
  }

  std::optional<NumericsProblem> numerics_problem() override {
    NumericsFlag flag{};
    DDPX_CUDA_CHECK(cudaMemcpyAsync(&flag, numerics_.get(), sizeof flag, cudaMemcpyDeviceToHost, compute_));
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
    if (flag.first_bad_check == 0) return std::nullopt;
    NumericsProblem problem;
    problem.fault = static_cast<NumericsFault>(flag.fault);
    problem.step = first_checked_step_ + static_cast<int64_t>(flag.first_bad_check) - 1;
    problem.loss = flag.bad_loss;
    problem.reference_loss = flag.reference_loss;
    problem.gradient_offset = flag.first_bad_offset;
    return problem;
  }

  std::vector<float> eval_logits(const float* images, int64_t batch) override {
    const int64_t classes = classes_, numel = image_numel_;
    std::vector<float> logits(static_cast<size_t>(batch * classes));
    DeviceBuffer<float> d_logits(static_cast<size_t>(options_.batch * classes), "eval logits");
    for (int64_t start = 0; start < batch; start += options_.batch) {
      const int64_t n = std::min(options_.batch, batch - start);
      DDPX_CUDA_CHECK(cudaMemcpy(images_[0].get(), images + start * numel, n * numel * 4, cudaMemcpyHostToDevice));
      model_->forward(images_[0].get(), n, d_logits.get());
      DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
      DDPX_CUDA_CHECK(
          cudaMemcpy(logits.data() + start * classes, d_logits.get(), n * classes * 4, cudaMemcpyDeviceToHost));
    }
    return logits;
  }

  std::optional<std::vector<float>> weight_average_logits(const float* images, int64_t batch) override {
    if (!weight_average_.get()) return std::nullopt;
    // The model computes with its own parameters: they are set aside, the average takes their place for the
    // forward passes, and they come back (with the bf16 copy) before anything else runs on the stream.
    DeviceBuffer<float> kept(layout_.buffer_size(), "parameters set aside for the EMA's evaluation");
    const size_t bytes = layout_.buffer_size() * 4;
    DDPX_CUDA_CHECK(cudaMemcpyAsync(kept.get(), model_->params(), bytes, cudaMemcpyDeviceToDevice, compute_));
    DDPX_CUDA_CHECK(
        cudaMemcpyAsync(model_->params(), weight_average_.get(), bytes, cudaMemcpyDeviceToDevice, compute_));
    model_->sync_low_precision_weights();
    std::vector<float> logits = eval_logits(images, batch);
    DDPX_CUDA_CHECK(cudaMemcpyAsync(model_->params(), kept.get(), bytes, cudaMemcpyDeviceToDevice, compute_));
    model_->sync_low_precision_weights();
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
    return logits;
  }
  std::optional<std::vector<float>> weight_average() override {
    if (!weight_average_.get()) return std::nullopt;
    std::vector<float> values(layout_.buffer_size());
    DDPX_CUDA_CHECK(cudaMemcpyAsync(values.data(), weight_average_.get(), values.size() * 4, cudaMemcpyDeviceToHost,
                                    compute_));
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
    return values;
  }
  std::optional<float> last_grad_norm() override {
    if (options_.recipe.clip_grad_norm == 0) return std::nullopt;
    float norm = 0;
    DDPX_CUDA_CHECK(cudaMemcpyAsync(&norm, clip_scalars_.get(), sizeof norm, cudaMemcpyDeviceToHost, compute_));
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
    return norm;
  }

  EnginePhaseTimes last_phase_times() override {
    // Events of the step before the previous one: complete by now in a steady pipeline (query, don't wait).
    // In graph mode, the previous step replayed the other parity's graph; its event nodes hold that step's times
    // until that graph is replayed again (after this call).
    return times_of_step_before(2);
  }

  // The phase times held by one set of events, of optimizer step `step`.
  EnginePhaseTimes times_of(const std::array<cudaEvent_t, kNumPhaseEvents>& e, int64_t step) {
    EnginePhaseTimes t;
    if (cudaEventQuery(e[kStepEnd]) != cudaSuccess) DDPX_CUDA_CHECK(cudaEventSynchronize(e[kStepEnd]));
    auto ms = [&](int a, int b) {
      float v = 0;
      cudaEventElapsedTime(&v, e[a], e[b]);
      return static_cast<double>(v);
    };
    t.h2d_copy = ms(kGradsZeroed, kCopyDone);
    t.forward = ms(kCopyDone, kForwardEnd);
    t.backward = ms(kForwardEnd, kBackwardEnd);
    t.optimizer = ms(kOptimizerStart, kStepEnd) + ms(kStepStart, kGradsZeroed);
    t.device_total = ms(kStepStart, kStepEnd);
    t.step = step;
    float since_reference = 0;
    if (cudaEventElapsedTime(&since_reference, reference_, e[kStepStart]) == cudaSuccess)
      t.device_start_steady_ms = reference_host_ms_ + static_cast<double>(since_reference);
    else
      cudaGetLastError();  // no start then: the step is drawn at its host time
    return t;
  }

  // The step just run: eager, the ring entry it recorded (ring_pos_ has moved past it); a replay, the event nodes
  // of its parity's graph. Waits for the step's last event.
  EnginePhaseTimes completed_step_times() override { return times_of_step_before(1); }

  // The phase times of the step `back` steps before now (1: the step just run, 2: the one before it), from the
  // ring of eager steps' events or, in graph mode, the event nodes of that step's parity's graph; all zero when
  // there was no such step.
  EnginePhaseTimes times_of_step_before(int back) {
    if (graph_mode_) {
      const int parity = back == 1 ? parity_ : 1 - parity_;
      if (!replayed_[parity]) return {};
      return times_of(graph_events_[parity], graph_step_[parity]);
    }
    if (ring_pos_ < back) return {};
    const int64_t slot = (ring_pos_ - back) % kEventRing;
    return times_of(events_[slot], ring_step_[slot]);
  }

  void synchronize() override {
    DDPX_CUDA_CHECK(cudaStreamSynchronize(copy_));
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
  }

  double device_memory_gib() override {
    size_t free_bytes = 0, total_bytes = 0;
    DDPX_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return static_cast<double>(total_bytes - free_bytes - baseline_used_) / (1024.0 * 1024 * 1024);
  }

  // Device optimizer state by the names io/checkpoint uses (allocated on first use, before any capture).
  std::vector<std::pair<std::string, float*>> optimizer_state() {
    std::vector<std::pair<std::string, float*>> state;
    for (const std::string& name : options_.optimizer.state_names())
      state.push_back({name, model_->optimizer_state(name)});
    return state;
  }

  // CUDA graphs (GraphCapture).
  int input_parity() const override { return parity_; }
  bool has_graph(int parity, GraphVariant variant) const override {
    return graphs_[parity][static_cast<int>(variant)] != nullptr;
  }
  void capture_begin(GraphVariant variant) override {
    capture_variant_ = static_cast<int>(variant);
    DDPX_CUDA_CHECK(cudaStreamWaitEvent(compute_, copy_done_[parity_], 0));
    DDPX_CUDA_CHECK(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeRelaxed));
    capturing_ = true;
  }
  void capture_end() override {
    cudaGraph_t graph = nullptr;
    const cudaError_t end_status = cudaStreamEndCapture(compute_, &graph);
    capturing_ = false;  // the stream has left capture mode, whatever the outcome
    DDPX_CUDA_CHECK(end_status);
    cudaGraphExec_t& exec = graphs_[parity_][capture_variant_];
    const cudaError_t instantiate_status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);  // the executable graph keeps what it needs
    if (instantiate_status != cudaSuccess) exec = nullptr;
    DDPX_CUDA_CHECK(instantiate_status);
    // Uploaded now, so that no replay pays for it: without this the first replay of every graph carries the
    // upload, which made the first calibration step of each parity 0.1 ms slower than the rest (H200, ViT-L/32).
    DDPX_CUDA_CHECK(cudaGraphUpload(exec, compute_));
    graph_mode_ = true;
  }
  void capture_abandon() noexcept override {
    if (!capturing_) return;
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(compute_, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // clears the invalidated capture's error; the caller reports the one that stopped it
    capturing_ = false;
  }
  void replay(int64_t step, GraphVariant variant) override {
    cudaGraphExec_t exec = graphs_[parity_][static_cast<int>(variant)];
    DDPX_INTERNAL_ASSERT(exec != nullptr, "replay of a graph that was never captured (parity {}, variant {})",
                         parity_, static_cast<int>(variant));
    DDPX_CUDA_CHECK(cudaStreamWaitEvent(compute_, copy_done_[parity_], 0));
    DDPX_CUDA_CHECK(cudaGraphLaunch(exec, compute_));
    replayed_[parity_] = true;
    graph_step_[parity_] = step;
    DDPX_CUDA_CHECK(cudaEventRecord(input_free_[parity_], compute_));
    if (first_checked_step_ == 0) first_checked_step_ = step;
    step_ = step;
  }

 private:
  // The reference event for device start times: recorded on the idle compute stream between two host clock reads;
  // it ran within them, so their midpoint is its host time to within half their gap. The narrowest of a few tries.
  void record_reference_event() {
    DDPX_CUDA_CHECK(cudaStreamSynchronize(compute_));
    std::array<cudaEvent_t, 3> tries{};
    double narrowest = 0;
    size_t best = 0;
    for (size_t i = 0; i < tries.size(); ++i) {
      DDPX_CUDA_CHECK(cudaEventCreate(&tries[i]));
      const double before = steady_ms();
      DDPX_CUDA_CHECK(cudaEventRecord(tries[i], compute_));
      DDPX_CUDA_CHECK(cudaEventSynchronize(tries[i]));
      const double after = steady_ms();
      if (i == 0 || after - before < narrowest) {
        narrowest = after - before;
        reference_host_ms_ = (before + after) / 2;
        best = i;
      }
    }
    for (size_t i = 0; i < tries.size(); ++i) {
      if (i == best) {
        reference_ = tries[i];
      } else {
        cudaEventDestroy(tries[i]);
      }
    }
  }
  static double steady_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  // The step's update of elements [begin, end); with --no-decay the exempt tensors' runs (widened to whole
  // vectors of 4, model/no_decay.hpp) are updated with weight decay 0, as the CPU engine does.
  void update(int64_t step, size_t begin, size_t end, cudaStream_t stream) {
    unsigned long long* bad = &numerics_.get()->step_bad_offset;
    if (!options_.recipe.no_decay)
      return model_->optimizer_span(options_.optimizer, step, begin, end, stream, bad);
    for_each_decay_run(begin, end, no_decay_, [&](size_t run_begin, size_t run_end, bool decay) {
      model_->optimizer_span(decay ? options_.optimizer : undecayed_, step, run_begin, run_end, stream, bad);
    });
  }

  // The recipe's device state (train/recipe_options.hpp): clip scratch, the EMA, mixing buffers, exempt spans.
  void set_up_recipe(const RecipeOptions& recipe) {
    if (recipe.no_decay) {
      no_decay_ = widened_to_vectors(no_decay_spans(layout_), 4);
      undecayed_ = options_.optimizer;
      undecayed_.weight_decay = 0.f;
    }
    if (recipe.clip_grad_norm != 0) {
      clip_partials_ = DeviceBuffer<double>(static_cast<size_t>(clip_partials_count()), "clip partial sums");
      clip_scalars_ = DeviceBuffer<float>(2, "clip norm and coefficient");
      DDPX_CUDA_CHECK(cudaMemsetAsync(clip_scalars_.get(), 0, clip_scalars_.bytes(), compute_));
    }
    if (recipe.ema_decay != 0) {
      weight_average_ = DeviceBuffer<float>(layout_.buffer_size(), "weight EMA (--ema-decay)");
      ema_keep_ = static_cast<float>(recipe.ema_decay_in_use());
      ema_blend_ = static_cast<float>(1.0 - recipe.ema_decay_in_use());
    }
    if (recipe.mix.enabled()) {
      mixed_images_ = DeviceBuffer<float>(static_cast<size_t>(options_.batch * image_numel_), "mixed images");
      mixed_labels_ = DeviceBuffer<int32_t>(static_cast<size_t>(options_.batch), "mixed labels");
    }
    model_->set_class_targets({.label_smoothing = static_cast<float>(recipe.label_smoothing)});
  }

  // --mixup/--cutmix: this batch's draw (from its index, as the CPU engine draws: every rank alike, a resumed run
  // the same) applied on the compute stream into the mixing buffers, and the loss's targets set to match. Returns
  // the images the forward reads.
  const float* mixed_input() {
    const RecipeOptions& recipe = options_.recipe;
    if (!recipe.mix.enabled()) return images_[parity_].get();
    DDPX_INTERNAL_ASSERT(!capturing_, "a mixed batch's draw cannot be captured (step_graphs.hpp keeps graphs off)");
    Rng rng(options_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(batch_index_) + 1);
    const MixDraw draw = draw_mix(rng, recipe.mix, input_shape_.image_size, input_shape_.image_size);
    DeviceClassTargets targets{.label_smoothing = static_cast<float>(recipe.label_smoothing)};
    if (draw.kind == MixKind::none) {
      model_->set_class_targets(targets);
      return images_[parity_].get();
    }
    const DeviceMixDraw device_draw{.kind = draw.kind == MixKind::mixup ? 1 : 2,
                                    .own = static_cast<float>(draw.lambda),
                                    .other = static_cast<float>(1.0 - draw.lambda),
                                    .x1 = draw.x1, .y1 = draw.y1, .x2 = draw.x2, .y2 = draw.y2};
    apply_mix(images_[parity_].get(), mixed_images_.get(), labels_[parity_].get(), mixed_labels_.get(), batch_size_,
              input_shape_.channels, input_shape_.image_size, input_shape_.image_size, device_draw, compute_);
    targets.mixed_labels = mixed_labels_.get();
    targets.mix = static_cast<float>(draw.lambda);
    model_->set_class_targets(targets);
    return mixed_images_.get();
  }

  // --ema-decay: the first update copies the weights, every later one blends (optim/weight_average.hpp), on
  // --ema-every's cadence, --ema-copy-epochs restarting it (optim/ema_cadence.hpp). A cadence other than every step
  // keeps steps out of CUDA graphs (train/step_graphs.cpp), so the host decides here at every step.
  void update_weight_average(int64_t step) {
    const EmaCadence& cadence = options_.recipe.ema_cadence;
    if (!weight_average_.get() || !cadence.updates_at(step)) return;
    weight_average_update(weight_average_.get(), model_->params(), static_cast<int64_t>(layout_.buffer_size()),
                          ema_keep_, ema_blend_, ema_updates_ == 0, compute_);
    ++ema_updates_;
    if (cadence.copies_at(step)) ema_updates_ = 0;
  }

  void record(PhaseEvent which) {
    if (capturing_) {
      // Event nodes in the graph: every replay re-records them, so graph steps are timed like eager ones.
      DDPX_CUDA_CHECK(cudaEventRecordWithFlags(graph_events_[parity_][which], compute_, cudaEventRecordExternal));
      return;
    }
    DDPX_CUDA_CHECK(cudaEventRecord(events_[ring_pos_ % kEventRing][which], compute_));
  }

  const FlatLayout& layout_;
  int64_t image_numel_, classes_;
  InputShape input_shape_;
  std::array<DeviceBuffer<uint8_t>, 2> pixels_;  // uint8 batches (--normalize device)
  EngineOptions options_;
  int device_;
  int rank_;  // global rank: seeds --data synthetic-device per rank
  std::string device_name_;
  cudaStream_t compute_ = nullptr, copy_ = nullptr;
  cudaStream_t update_ = nullptr;  // span updates of the optimizer without a reducer (overlapping backward)
  cudaEvent_t span_ready_ = nullptr, updates_done_ = nullptr;
  int64_t span_step_ = 0;
  bool spans_forked_ = false;
  std::unique_ptr<CudaModel> model_;
  std::array<DeviceBuffer<float>, 2> images_;
  std::array<DeviceBuffer<int32_t>, 2> labels_;
  std::array<cudaEvent_t, 2> copy_done_{}, input_free_{};
  DeviceBuffer<float> loss_;
  DeviceBuffer<NumericsFlag> numerics_;
  int64_t first_checked_step_ = 0;  // the trainer step of the device's first numerics check
  std::array<std::array<cudaEvent_t, kNumPhaseEvents>, kEventRing> events_{};
  int64_t ring_pos_ = 0;
  std::array<int64_t, kEventRing> ring_step_{};  // the optimizer step each ring entry holds
  std::array<int64_t, 2> graph_step_{};          // the step each parity's graph last replayed
  cudaEvent_t reference_ = nullptr;              // device start times are elapsed from it
  double reference_host_ms_ = 0;                 // its host steady_clock time (ms)
  size_t baseline_used_ = 0;
  int parity_ = 0;
  int64_t micro_counter_ = 0;
  int64_t batch_size_ = 0;
  int64_t batch_index_ = 0;  // HostBatch::step of the staged batch (the mixing draw's seed)
  // The recipe (set_up_recipe): exempt spans and the spec without decay, clip scratch and [norm, coefficient], the
  // weight EMA and its update count, mixing buffers.
  std::vector<BufferSpan> no_decay_;
  OptimizerSpec undecayed_;
  DeviceBuffer<double> clip_partials_;
  DeviceBuffer<float> clip_scalars_;
  DeviceBuffer<float> weight_average_;
  float ema_keep_ = 0, ema_blend_ = 0;
  int64_t ema_updates_ = 0;
  DeviceBuffer<float> mixed_images_;
  DeviceBuffer<int32_t> mixed_labels_;
  int64_t step_ = 0;
  bool capturing_ = false, graph_mode_ = false;
  std::array<std::array<cudaGraphExec_t, kGraphVariants>, 2> graphs_{};  // [input parity][GraphVariant]
  std::array<bool, 2> replayed_{};  // a graph of that parity has been replayed (its phase events hold a step)
  int capture_variant_ = 0;
  std::array<std::array<cudaEvent_t, kNumPhaseEvents>, 2> graph_events_{};  // per input parity's graph
};

}  // namespace

std::unique_ptr<StepEngine> make_cuda_engine(const Model& model, const EngineOptions& options, int device,
                                             int rank) {
  return std::make_unique<CudaEngine>(model, options, device, rank);
}

}  // namespace ddpx
