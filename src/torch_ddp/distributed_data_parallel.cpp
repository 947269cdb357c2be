// ddpx::torch::DistributedDataParallel's engine: the flat gradient buffer of views, the accumulator hooks that mark
// it ready, the reducer's steps and their records. See distributed_data_parallel.hpp for the guarantees.
//
// Note [Readiness from autograd, in buffer order]
// ddpx's Reducer takes ready spans in buffer order only (ddp/reducer.hpp). Autograd's gradient-accumulator
// post-hooks fire in the order the engine happens to run them, which for most models is reverse registration
// order (the buffer's order) but need not be: a parameter used twice, a skip connection, a branch. So each hook
// sets its tensor's flag, and a cursor (readiness_cursor.hpp, unit-tested without LibTorch) hands the reducer the
// longest run of ready tensors from where it stopped: a bucket still launches the moment it and every bucket before
// it are final, as in c10d's reducer, and a tensor that arrives early waits only for those before it. The end of the backward pass is an autograd final callback
// (queued by the step's first hook, as c10d's reducer queues finalize_backward), which runs on the thread that
// finished the graph before backward() returns: it completes the step there, so the averaged gradients are in
// grad() when backward() returns.
#include "torch_ddp/distributed_data_parallel.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#ifdef DDPX_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "comm_plan/bucket_plan.hpp"
#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "core/test_fault.hpp"
#include "ddp/comm_hook_factory.hpp"
#include "ddp/reducer.hpp"
#include "dist/watchdog.hpp"
#include "dist/job.hpp"
#include "torch_ddp/ddp_job.hpp"
#include "torch_ddp/readiness_cursor.hpp"

namespace ddpx::torch {
namespace {

using ::torch::autograd::Node;
using ::torch::autograd::variable_list;

constexpr size_t kAlignElements = 64;  // 256 bytes between tensors, as ddpx's own flat layout

std::string dtype_name(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    default: return c10::toString(type);
  }
}

std::string shape_text(at::IntArrayRef sizes) { return fmt::format("[{}]", fmt::join(sizes, ", ")); }

std::string tensor_line(const std::string& kind, const std::string& name, const at::Tensor& t) {
  return fmt::format("{} {} {} {}", kind, name, shape_text(t.sizes()), dtype_name(t.scalar_type()));
}

// Every tensor's bytes from rank 0, in one broadcast (host staging: any device, any dtype).
void broadcast_tensors(DistJob& job, const std::vector<at::Tensor>& tensors, const std::string& what) {
  if (job.world() == 1 || tensors.empty()) return;
  size_t total = 0;
  for (const at::Tensor& t : tensors) total += t.numel() * t.element_size();
  std::vector<uint8_t> bytes(total);
  size_t at = 0;
  for (const at::Tensor& t : tensors) {
    const at::Tensor host = t.detach().to(at::kCPU).contiguous();
    std::memcpy(bytes.data() + at, host.data_ptr(), host.numel() * host.element_size());
    at += host.numel() * host.element_size();
  }
  job.broadcast_from_rank0(bytes.data(), bytes.size(), "the broadcast of rank 0's " + what);
  at::NoGradGuard no_grad;
  at = 0;
  for (const at::Tensor& t : tensors) {
    const at::Tensor host = at::from_blob(bytes.data() + at, t.sizes(), t.options().device(at::kCPU));
    t.copy_(host);
    at += t.numel() * t.element_size();
  }
}

}  // namespace

// Where the engine stands between the module's passes (its state machine).
enum class Phase {
  between_passes,  // before a forward, or after a backward completed its step
  in_backward,     // the first gradient of a backward arrived; its final callback completes the step
  broken,          // a step failed (State::broken_reason says how): every later call throws that
};

// The step record's state: a step runs from the first forward after the last synchronized backward to the next one.
enum class RecordPhase {
  closed,   // no step begun: the next forward opens one
  open,     // forwards (and accumulation backwards) of a step in progress
  pending,  // its synchronized backward is done: the next forward (or write_report) ends it
};

struct DdpEngine::State {
  struct Param {
    std::string name;
    at::Tensor tensor;
    at::Tensor view;  // into flat
    size_t offset = 0, numel = 0;
    void* data_at_wrap = nullptr;
    std::shared_ptr<Node> accumulator;
    uintptr_t hook_key = 0;
  };

  ::torch::nn::Module& module;
  DdpOptions options;
  std::unique_ptr<DistJob> job;
  Device device = Device::cpu;
  std::vector<Param> params;  // buffer (backward) order
  size_t module_parameter_count = 0;
  std::vector<at::Tensor> buffers;
  at::Tensor flat;
  std::unique_ptr<Reducer> reducer;  // after job: destroyed before the communicator and the watchdog
  std::unique_ptr<ReadinessCursor> readiness;  // over params, in buffer order
  bool cuda = false;

  bool sync_enabled = true;  // false inside no_sync()
  bool pass_sync = true;     // this forward/backward pass's decision, taken at forward
  Phase phase = Phase::between_passes;
  std::string broken_reason;  // Phase::broken: why this engine cannot go on
  std::vector<char> unused;  // the last forward's parameters outside the output's graph (find_unused_parameters)

  // Records: a step runs from the first forward after the last synchronized backward to the next one.
  RecordPhase record_phase = RecordPhase::closed;
  StepRecord open_record;
  double step_start_ms = 0, forward_begin_ms = 0, forward_end_ms = 0, sync_end_ms = 0;
  int micro_batches = 0, last_micro_batches = 1;
  int64_t batch = 0;
  std::vector<StepRecord> records;
  int64_t sync_steps_begun = 0;

  State(::torch::nn::Module& m, DdpOptions o) : module(m), options(std::move(o)) {}

  void* compute_stream() const {
#ifdef DDPX_TORCH_CUDA
    if (cuda) return c10::cuda::getCurrentCUDAStream(flat.device().index()).stream();
#endif
    return nullptr;
  }

  void require_unchanged() const {
    const size_t now = module.parameters().size();
    DDPX_REQUIRE(now == module_parameter_count,
                 "ddpx::torch::DistributedDataParallel: the module has {} parameters now and had {} when it was "
                 "wrapped; register every parameter before wrapping the module", now, module_parameter_count);
    for (const Param& p : params)
      DDPX_REQUIRE(p.tensor.data_ptr() == p.data_at_wrap && static_cast<size_t>(p.tensor.numel()) == p.numel,
                   "ddpx::torch::DistributedDataParallel: parameter '{}' was reallocated after the module was "
                   "wrapped (module->to(), a resize or a reassigned tensor); move the module to its device and "
                   "dtype before wrapping it", p.name);
  }

  // The parameter's grad() must be its view: a gradient put elsewhere (zero_grad(set_to_none), a user's
  // assignment) is copied in and the view put back, as c10d's reducer does for gradient_as_bucket_view.
  void adopt_gradient(Param& p, bool zero_when_undefined) {
    at::NoGradGuard no_grad;
    at::Tensor& grad = p.tensor.mutable_grad();
    if (!grad.defined()) {
      if (zero_when_undefined) p.view.zero_();
      grad = p.view;
      return;
    }
    if (grad.data_ptr() == p.view.data_ptr()) return;
    DDPX_REQUIRE(!grad.is_sparse(), "ddpx::torch::DistributedDataParallel: parameter '{}' got a sparse gradient; "
                 "ddpx reduces dense gradients only (an embedding with sparse=true cannot be wrapped)", p.name);
    p.view.copy_(grad.view(p.view.sizes()));
    grad = p.view;
  }

  [[noreturn]] void break_with(std::string reason) {
    phase = Phase::broken;
    broken_reason = std::move(reason);
    fail("{}", broken_reason);
  }

  void begin_backward() {
    if (phase == Phase::broken) fail("{}", broken_reason);
    require_unchanged();
    phase = Phase::in_backward;
    readiness->begin_pass();
    if (pass_sync) test_fault_step(++sync_steps_begun);
    open_record.buckets.clear();
    reducer_begin_ms = job->now_ms();
    reducer->begin_step(pass_sync, compute_stream());
    ::torch::autograd::Engine::get_default_engine().queue_callback([this] { finish_backward(); });
    if (options.find_unused_parameters)
      for (size_t i = 0; i < params.size(); ++i)
        if (unused[i]) {
          adopt_gradient(params[i], /*zero_when_undefined=*/true);
          readiness->set_ready(i);
        }
    readiness->advance(*reducer);
  }

  void on_gradient_ready(size_t index) {
    if (phase != Phase::in_backward) begin_backward();
    Param& p = params[index];
    if (readiness->ready(index)) {
      break_with(fmt::format(
          "ddpx::torch::DistributedDataParallel: Expected to mark a variable ready only once. Parameter '{}' "
          "received a gradient twice in one backward pass (or was marked unused by find_unused_parameters and "
          "then received one). This error is caused by one of the following reasons: 1) use of a module "
          "parameter outside the forward function; 2) reused parameters in multiple reentrant backward passes "
          "(a checkpointed module used twice, say); 3) a parameter used in a forward pass that does not go through "
          "ddp(...)", p.name));
    }
    adopt_gradient(p, /*zero_when_undefined=*/false);
    readiness->mark(index, *reducer);
  }

  void finish_backward() {
    const double backward_end_ms = job->now_ms();
    std::vector<std::string> missing;
    const std::vector<size_t> not_ready = readiness->not_ready();
    for (auto it = not_ready.rbegin(); it != not_ready.rend(); ++it)  // registration order, as the user wrote it
      missing.push_back(params[*it].name);
    if (!missing.empty()) {
      if (pass_sync && !options.find_unused_parameters) {
        break_with(fmt::format(
            "ddpx::torch::DistributedDataParallel: rank {}: Expected to have finished reduction in the prior "
            "iteration before starting a new one. This error indicates that your module has parameters that were "
            "not used in producing loss: {}. You can enable unused parameter detection by setting "
            "DdpOptions::find_unused_parameters = true (PyTorch: find_unused_parameters=True), and by making sure "
            "all forward function outputs participate in calculating loss",
            job->rank(), fmt::join(missing, ", ")));
      }
      for (const size_t i : not_ready) {
        adopt_gradient(params[i], /*zero_when_undefined=*/true);
        readiness->set_ready(i);
      }
      readiness->advance(*reducer);
    }
    try {
      reducer->finish_step();
      job->watchdog().throw_if_fired();
    } catch (...) {
      phase = Phase::broken;
      broken_reason = "ddpx::torch::DistributedDataParallel: a previous step's gradient reduction failed (see its "
                      "error); this rank cannot train on";
      throw;
    }
    phase = Phase::between_passes;
    open_record.phases.backward_ms += backward_end_ms - forward_end_ms;
    if (pass_sync) record_synchronized_step(backward_end_ms);
  }

  void record_synchronized_step(double backward_end_ms) {
    sync_end_ms = job->now_ms();
    const double shift = reducer_begin_ms - step_start_ms;  // bucket times are from begin_step
    // CUDA: reading a step's bucket times waits for its events (a host synchronization), so only the CPU records
    // them every step; the CUDA form's records hold host-side phase times only (the GPU runs behind the host).
    const std::vector<BucketTiming> timings = cuda ? std::vector<BucketTiming>{} : reducer->bucket_timings();
    for (const BucketTiming& t : timings)
      open_record.buckets.push_back(BucketRecord{.index = static_cast<int>(t.bucket),
                                                 .bytes = static_cast<int64_t>(t.bytes),
                                                 .elements = static_cast<int64_t>(t.elements),
                                                 .hook = reducer->hook().name(),
                                                 .collective = "all_reduce",
                                                 .launch_ms = t.ready_ms + shift,
                                                 .start_ms = t.start_ms + shift,
                                                 .end_ms = t.end_ms + shift,
                                                 .stream = "comm"});
    fill_comm_phases(open_record, backward_end_ms - step_start_ms);
    open_record.step = reducer->synchronized_steps() - 1;
    open_record.start_ms = step_start_ms;
    last_micro_batches = micro_batches;
    record_phase = RecordPhase::pending;
  }

  // The pending synchronized step ends now (the next forward, or write_report): what ran since its backward
  // (the optimizer, zero_grad, the next batch) is its optimizer time.
  void close_pending_record(double now_ms) {
    if (record_phase != RecordPhase::pending) return;
    record_phase = RecordPhase::closed;
    open_record.phases.optimizer_ms = now_ms - sync_end_ms;
    open_record.phases.total_ms = now_ms - open_record.start_ms;
    if (open_record.step >= options.report_warmup_steps) records.push_back(open_record);
  }

  double reducer_begin_ms = 0;
};

DdpEngine::DdpEngine(::torch::nn::Module& module, DdpOptions options)
    : state_(std::make_unique<State>(module, std::move(options))) {
  State& s = *state_;
  // The parameters that get gradients, checked before any collective so that a bad model fails alone and fast.
  std::vector<std::string> model_lines;
  std::vector<std::pair<std::string, at::Tensor>> trained;
  std::vector<at::Tensor> all_params;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const at::Tensor& t = item.value();
    all_params.push_back(t);
    model_lines.push_back(tensor_line(t.requires_grad() ? "parameter" : "frozen parameter", item.key(), t));
    if (!t.requires_grad()) continue;
    DDPX_REQUIRE(!t.is_sparse() && t.layout() == c10::kStrided,
                 "ddpx::torch::DistributedDataParallel: parameter '{}' is not a dense strided tensor; ddpx reduces "
                 "dense gradients only", item.key());
    DDPX_REQUIRE(t.scalar_type() == c10::ScalarType::Float,
                 "ddpx::torch::DistributedDataParallel: parameter '{}' is {}; ddpx reduces float32 gradients only "
                 "(keep the master weights in float32: module->to(torch::kFloat32), and use autocast or a 16-bit "
                 "comm_hook such as \"bf16\" for 16-bit speed)", item.key(), dtype_name(t.scalar_type()));
    DDPX_REQUIRE(t.is_contiguous(), "ddpx::torch::DistributedDataParallel: parameter '{}' is not contiguous "
                 "(strides {} for shape {}); make it contiguous before wrapping the module", item.key(),
                 shape_text(t.strides()), shape_text(t.sizes()));
    DDPX_REQUIRE(trained.empty() || trained.front().second.device() == t.device(),
                 "ddpx::torch::DistributedDataParallel: parameter '{}' is on {} but '{}' is on {}; move the whole "
                 "module to one device before wrapping it", item.key(), t.device().str(), trained.front().first,
                 trained.front().second.device().str());
    trained.emplace_back(item.key(), t);
  }
  DDPX_REQUIRE(!trained.empty(), "ddpx::torch::DistributedDataParallel: the module has no parameter that requires "
               "a gradient; there is nothing to synchronize");
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    model_lines.push_back(tensor_line("buffer", item.key(), item.value()));
    s.buffers.push_back(item.value());
  }
  s.module_parameter_count = all_params.size();
  const at::Device device = trained.front().second.device();
  s.cuda = device.is_cuda();
#ifndef DDPX_TORCH_CUDA
  DDPX_REQUIRE(!s.cuda, "ddpx::torch::DistributedDataParallel: the module is on {}, but this ddpx was built "
               "without the adapter's CUDA path (LibTorch without CUDA, or ddpx without CUDA); build ddpx against a "
               "LibTorch with CUDA (PyTorch's wheel: -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; "
               "print(torch.utils.cmake_prefix_path)'))", device.str());
#endif

  // The communication hook and the caps: parsed before the job so that a typo fails before any collective.
  CommHookSpec hook_spec;
  try {
    hook_spec = parse_comm_hook_spec(s.options.comm_hook);
  } catch (const Error& e) {
    fail("ddpx::torch::DdpOptions::comm_hook: {}", e.what());
  }
  DDPX_REQUIRE(s.options.bucket_cap_mb > 0 && s.options.first_bucket_cap_mb > 0,
               "ddpx::torch::DdpOptions: bucket_cap_mb ({}) and first_bucket_cap_mb ({}) must be positive",
               s.options.bucket_cap_mb, s.options.first_bucket_cap_mb);
  DDPX_REQUIRE(s.options.comm_timeout_s > 0, "ddpx::torch::DdpOptions::comm_timeout_s ({}) must be positive",
               s.options.comm_timeout_s);

#ifdef DDPX_TORCH_CUDA
  // NCCL's communicator binds to the current device: the module's.
  if (s.cuda) c10::cuda::set_device(device.index());
#endif
  s.device = s.cuda ? Device::cuda : Device::cpu;
  s.job = std::make_unique<DistJob>(ddp_job_options(
      s.options.backend, s.device, std::chrono::milliseconds(static_cast<int64_t>(s.options.comm_timeout_s * 1000))));

  // Buffer order = backward order: reverse registration order, as PyTorch's first buckets.
  std::vector<GradTensor> tensors;
  size_t offset = 0;
  for (auto it = trained.rbegin(); it != trained.rend(); ++it) {
    State::Param p;
    p.name = it->first;
    p.tensor = it->second;
    p.numel = static_cast<size_t>(p.tensor.numel());
    p.offset = offset;
    offset += (p.numel + kAlignElements - 1) / kAlignElements * kAlignElements;
    tensors.push_back(GradTensor{p.name, p.offset, p.numel, p.tensor.sizes().vec()});
    s.params.push_back(std::move(p));
  }
  const size_t buffer_elems = s.params.back().offset + s.params.back().numel;
  BucketPlan plan(tensors, BucketPlanOptions::from_mb(s.options.bucket_cap_mb, s.options.first_bucket_cap_mb));

  require_same_model(
      *s.job, model_lines, {{"DdpOptions::comm_hook", hook_spec.text()},
                    {"DdpOptions::bucket_cap_mb / first_bucket_cap_mb (the bucket plan)", plan.signature()},
                    {"DdpOptions::find_unused_parameters", s.options.find_unused_parameters ? "true" : "false"},
                    {"DdpOptions::broadcast_buffers", s.options.broadcast_buffers ? "true" : "false"},
                    {"DdpOptions::overlap", s.options.overlap ? "true" : "false"}});
  test_fault_point("broadcast");
  broadcast_tensors(*s.job, all_params, "parameters");
  broadcast_tensors(*s.job, s.buffers, "buffers");

  s.flat = at::zeros({static_cast<int64_t>(buffer_elems)}, trained.front().second.options().requires_grad(false));
  for (State::Param& p : s.params) {
    // Sharing the storage without being an autograd view: the optimizer's zero_grad() may detach_() a gradient,
    // which autograd refuses for views.
    {
      at::NoGradGuard no_grad;
      p.view = at::empty({0}, s.flat.options());
      p.view.set_(s.flat.storage(), static_cast<int64_t>(p.offset), p.tensor.sizes(), p.tensor.strides());
    }
    p.data_at_wrap = p.tensor.data_ptr();
    s.adopt_gradient(p, /*zero_when_undefined=*/false);  // an existing gradient is kept, in its view
  }
  ReducerOptions reducer_options;
  reducer_options.overlap = s.options.overlap;
  reducer_options.device = s.cuda ? GradDevice::cuda : GradDevice::cpu;
  reducer_options.watchdog = s.job->watchdog();
  s.reducer = std::make_unique<Reducer>(s.job->communicator(), s.flat.data_ptr<float>(), buffer_elems, tensors,
                                        std::move(plan), make_comm_hook(hook_spec), reducer_options);
  if (s.cuda) s.reducer->set_ready_timing(false);  // see record_synchronized_step
  std::vector<ReadinessCursor::Span> spans;
  for (const State::Param& p : s.params) spans.push_back({p.offset, p.numel});
  s.readiness = std::make_unique<ReadinessCursor>(std::move(spans));
  s.unused.assign(s.params.size(), 0);

  for (size_t i = 0; i < s.params.size(); ++i) {
    State::Param& p = s.params[i];
    p.accumulator = ::torch::autograd::impl::grad_accumulator(p.tensor);
    State* state = &s;
    p.hook_key = p.accumulator->add_post_hook(std::make_unique<::torch::autograd::utils::LambdaPostHook>(
        [state, i](const variable_list& outputs, const variable_list&) {
          state->on_gradient_ready(i);
          return outputs;
        }));
  }
}

DdpEngine::~DdpEngine() {
  if (!state_) return;
  for (State::Param& p : state_->params)
    if (p.accumulator) p.accumulator->del_post_hook(p.hook_key);
}

void DdpEngine::before_forward() {
  State& s = *state_;
  if (s.phase == Phase::broken) fail("{}", s.broken_reason);
  DDPX_REQUIRE(s.phase != Phase::in_backward, "ddpx::torch::DistributedDataParallel: forward called while a backward pass of this "
               "module is still running");
  s.require_unchanged();
  const double now = s.job->now_ms();
  s.close_pending_record(now);
  if (s.record_phase == RecordPhase::closed) {
    s.record_phase = RecordPhase::open;
    s.step_start_ms = now;
    s.micro_batches = 0;
    s.open_record = StepRecord{};
  }
  ++s.micro_batches;
  s.pass_sync = s.sync_enabled;
  if (s.options.broadcast_buffers) broadcast_tensors(*s.job, s.buffers, "buffers");
  s.forward_begin_ms = s.job->now_ms();
}

void DdpEngine::after_forward(const std::vector<at::Tensor>& outputs) {
  State& s = *state_;
  s.forward_end_ms = s.job->now_ms();
  s.open_record.phases.forward_ms += s.forward_end_ms - s.forward_begin_ms;
  if (!s.options.find_unused_parameters) return;
  DDPX_REQUIRE(!outputs.empty(), "ddpx::torch::DdpOptions::find_unused_parameters needs forward() to return a "
               "Tensor, a std::vector<Tensor> or a std::tuple holding Tensors (the graph is walked from them)");
  // Walk the autograd graph from the outputs: a parameter whose accumulator is not reached gets no gradient.
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> stack;
  for (const at::Tensor& out : outputs)
    if (out.defined() && out.grad_fn()) stack.push_back(out.grad_fn().get());
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    for (const auto& edge : node->next_edges())
      if (edge.function) stack.push_back(edge.function.get());
  }
  for (size_t i = 0; i < s.params.size(); ++i) s.unused[i] = !seen.count(s.params[i].accumulator.get());
}

void DdpEngine::set_batch(int64_t batch) {
  if (batch > 0) state_->batch = batch;
}

NoSync DdpEngine::no_sync() { return NoSync(*this); }

NoSync::NoSync(DdpEngine& engine) : engine_(engine), was_enabled_(engine.state_->sync_enabled) {
  engine_.state_->sync_enabled = false;
}
NoSync::~NoSync() { engine_.state_->sync_enabled = was_enabled_; }

void DdpEngine::write_report(const std::string& path) {
  State& s = *state_;
  s.close_pending_record(s.job->now_ms());
  RunConfig config;
  config.model = s.options.model_name;
  config.batch = s.options.batch_per_rank > 0 ? s.options.batch_per_rank : std::max<int64_t>(1, s.batch);
  config.precision = "fp32";
  config.hook = s.reducer->hook().name();
  config.bucket_mb = s.options.bucket_cap_mb;
  config.first_bucket_mb = s.options.first_bucket_cap_mb;
  config.overlap = s.options.overlap;
  config.grad_accum = std::max(1, s.last_micro_batches);
  config.workers = 0;
  for (const State::Param& p : s.params)
    config.gradient_tensors.push_back(GradientTensorInfo{p.name, p.tensor.sizes().vec(), static_cast<int64_t>(p.offset),
                                                         static_cast<int64_t>(p.numel)});
  torch::write_report(*s.job, s.device, path, std::move(config), s.records);
}

int DdpEngine::rank() const { return state_->job->rank(); }
int DdpEngine::world() const { return state_->job->world(); }
const DdpOptions& DdpEngine::options() const { return state_->options; }
std::string DdpEngine::bucket_table() const { return state_->reducer->plan().table(); }
int64_t DdpEngine::synchronized_steps() const { return state_->reducer->synchronized_steps(); }

}  // namespace ddpx::torch
