// StepEngine: one rank's model + optimizer on one device (CPU or CUDA), behind the few calls the training loop
// makes. The loop (trainer.cpp) owns data, communication and reporting; an engine owns parameters, gradients,
// optimizer state and activations.
// Guarantees: grad_buffer() has the model's FlatLayout (backward order) (so a Reducer can work on it in place);
// forward_backward() ADDS scaled gradients into it and reports final spans through on_ready in buffer order;
// on CUDA all work is enqueued on compute_stream() without host synchronization unless a call says it syncs.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/batch_loader.hpp"
#include "data/data_spec.hpp"
#include "data/dataset.hpp"
#include "core/reduced_gradients.hpp"
#include "model/model.hpp"
#include "train/engine_options.hpp"
#include "train/graph_capture.hpp"
#include "train/numerics_guard.hpp"

namespace ddpx {

// Optimizer state as host vectors (for checkpoints): name -> flat buffer of the layout's size; with --ema-decay
// also the weight average and its update count (optim/weight_average.hpp), so a resume continues it bit for bit.
struct HostOptimizerState {
  int64_t step = 0;
  std::vector<std::pair<std::string, std::vector<float>>> buffers;
  std::vector<float> weight_average;  // empty: no --ema-decay
  int64_t weight_average_updates = 0;
};

// Phase times of one step (ms), measured by the engine (CPU clocks or CUDA events).
struct EnginePhaseTimes {
  double h2d_copy = 0, forward = 0, backward = 0, optimizer = 0;
  double device_total = 0;  // CUDA: first to last event of the step (0 on the CPU)
  int64_t step = 0;         // CUDA: the optimizer step these times are of (a completed one); 0 on the CPU
  // CUDA: when the step's first event ran on the GPU, as host steady_clock milliseconds: the event's elapsed time
  // from one reference event whose host time the engine measured at start. See Note [One clock for all ranks].
  std::optional<double> device_start_steady_ms;
};

class StepEngine {
 public:
  virtual ~StepEngine() = default;
  virtual std::string describe() const = 0;
  virtual std::string device_name() const { return "cpu"; }  // the GPU's name on CUDA
  virtual std::string pci_bus_id() const { return ""; }       // CUDA: the GPU's, "0000:19:00.0"; "" on the CPU
  virtual bool is_cuda() const = 0;
  virtual float* grad_buffer() = 0;    // host (CPU) or device (CUDA)
  virtual void* compute_stream() = 0;  // cudaStream_t, nullptr on CPU
  // Whole-step CUDA graphs (train/graph_capture.hpp): the engine's capture calls, or nullptr where it has none
  // (the CPU engine). Asked once, by the graph schedule (train/step_graphs.hpp).
  virtual GraphCapture* graph_capture() { return nullptr; }

  virtual void upload_params(const float* host_params) = 0;
  virtual void download_params(float* host_params) = 0;
  virtual HostOptimizerState download_optimizer_state() = 0;
  virtual void upload_optimizer_state(const HostOptimizerState& state) = 0;
  virtual void* allocate_host_batch(size_t bytes) = 0;  // pinned on CUDA
  virtual void free_host_batch(void* p) = 0;

  // Stages a micro-batch (CPU: uses it in place; CUDA: async copy on the copy stream). The batch's slot may be
  // returned to the loader once batch_consumed() has returned.
  virtual void set_batch(const HostBatch& batch) = 0;
  virtual void batch_consumed(const HostBatch& batch) = 0;
  virtual void zero_grads() = 0;
  virtual void forward_backward(float grad_scale, const ReadyFn& on_ready) = 0;
  virtual void optimizer_step(int64_t step) = 0;  // step counts from 1

  // Note [Optimizer overlapped with backward]
  // Instead of optimizer_step() after the backward pass, the optimizer can be applied span by span while the
  // backward runs: to each span of the flat buffers as soon as its gradients are final (no reducer: the trainer
  // passes on_ready's spans) or reduced (the reducer's AfterReduce, ddp/bucket_launcher.hpp). The updates are
  // element-wise, so the spans of one step, disjoint and covering the buffer, give optimizer_step()'s result bit
  // for bit. It is safe because a span is final only once the backward pass no longer reads its parameters: the
  // models mark a whole block ready after its last kernel. Per synchronized step:
  //   begin_span_updates(step)   before the step's forward (allocates optimizer state on the first call)
  //   optimizer_span(b, e, s)    for each span, in any order, from the trainer's thread or the reducer's
  //   finish_span_updates()      where optimizer_step() would be
  // optimizer_span's stream: the CUDA stream the span's gradients are final on (the reducer's communication
  // stream), or nullptr: final on the compute stream as enqueued so far. The update runs on the engine's own
  // update stream, overlapping the rest of the backward pass, forked from whichever stream it is (a reducer span
  // whose gradients sit in a cast hook's 16-bit wire excepted: Note [Reduced spans updated beside the hook],
  // train/cuda_engine.cpp). The CPU engine updates at once.
  // `wire` (CUDA, from the reducer only): the span's averaged gradients are in a cast hook's 16-bit buffer, not in
  // the gradient buffer; the update reads them there (Note [Widening fused into the update], ddp/comm_hook.hpp).
  virtual void begin_span_updates(int64_t step) = 0;
  virtual void optimizer_span(size_t begin, size_t end, void* stream, const ReducedGradients* wire = nullptr) = 0;
  virtual void finish_span_updates() = 0;
  // Mean loss of the last forward_backward (synchronizes on CUDA).
  virtual float last_loss() = 0;
  // The first step whose loss or gradients broke the numerics rule (train/numerics_guard.hpp), if any. Every step
  // is checked on both engines. CPU: free to ask after any step. CUDA: the check runs on the device; asking reads
  // its flag and synchronizes the compute stream, so the trainer asks where it synchronizes anyway.
  virtual std::optional<NumericsProblem> numerics_problem() = 0;
  // Logits of images (host, NCHW) for evaluation.
  virtual std::vector<float> eval_logits(const float* images, int64_t batch) = 0;
  // --ema-decay: the same with the weight average, and the average itself (host, the layout's buffer); nullopt
  // without one.
  virtual std::optional<std::vector<float>> weight_average_logits(const float*, int64_t) { return std::nullopt; }
  virtual std::optional<std::vector<float>> weight_average() { return std::nullopt; }
  // --clip-grad-norm: the global norm of the last step's averaged gradients before clipping; nullopt without it.
  virtual std::optional<float> last_grad_norm() { return std::nullopt; }
  // Phase times of a step completed earlier (CUDA: one step late, so that reading never stalls the pipeline; CPU:
  // the last step).
  virtual EnginePhaseTimes last_phase_times() = 0;
  // Phase times of the step that just ran, waiting for it to complete on CUDA (the calibration steps read their own
  // times this way: Note [Calibration steps], train/calibration.hpp).
  virtual EnginePhaseTimes completed_step_times() { return last_phase_times(); }
  virtual void synchronize() {}
  // Device memory this engine holds (GiB), allocations after context creation; 0 on the CPU.
  virtual double device_memory_gib() { return 0; }
};

// ranks_on_node: shares the node's cores out between its ranks' BLAS threads (see model/blas_threads.hpp).
// The engines own device concerns only (threads, streams, pinned memory, events, graphs); the model, which the
// caller keeps alive for the engine's lifetime, brings the layout, shapes and forward/backward.
std::unique_ptr<StepEngine> make_cpu_engine(const Model& model, const EngineOptions& options,
                                            int ranks_on_node = 1);
// device: the GPU (local rank); rank: the global rank (so --data synthetic-device differs between ranks).
// Defined in CUDA builds only (cuda_engine.cpp); declared in every build so that this header reads the same in
// every translation unit. Callers are compiled under DDPX_HAVE_CUDA and name the missing build otherwise.
std::unique_ptr<StepEngine> make_cuda_engine(const Model& model, const EngineOptions& options, int device,
                                             int rank = 0);

}  // namespace ddpx
