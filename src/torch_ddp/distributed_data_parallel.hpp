// ddpx::torch::DistributedDataParallel: data parallelism for LibTorch modules, PyTorch's DDP in C++ (PyTorch issue
// #48959), over ddpx's reducer, communicators and hooks.
//
//   auto model = std::make_shared<Net>();                          // any torch::nn::Module
//   ddpx::torch::DistributedDataParallel ddp(model, {.comm_hook = "bf16"});
//   torch::optim::SGD optimizer(model->parameters(), 0.1);
//   for (auto& [x, y] : batches) {
//     optimizer.zero_grad();
//     auto loss = torch::nn::functional::cross_entropy(ddp(x), y);  // ddp(x) runs model->forward(x)
//     loss.backward();          // buckets are averaged over ranks while backward runs; done when it returns
//     optimizer.step();
//   }
//
// Guarantees:
//  - Construction is collective: it joins the job its launcher started (torchrun, mpirun, Slurm, ddpx's
//    launcher; alone, a world of one), checks that every rank wraps the same model (every parameter's and
//    buffer's name, shape and dtype, in order: one error on every rank naming the first difference) with the
//    same options, and copies rank 0's parameters and buffers to every rank.
//  - Gradients are views into one flat buffer laid out in backward order (reverse registration order, as
//    PyTorch's initial buckets; PyTorch's gradient_as_bucket_view=True): after construction every parameter's
//    grad() is its view. Readiness comes from post-hooks on the parameters' gradient accumulators, as in c10d's
//    reducer; a bucket is reduced (DdpOptions::comm_hook) as soon as it and every bucket before it are final,
//    while the backward pass goes on, and backward() returns with the average in every grad(). A gradient the
//    user replaced (grad set to another tensor or undefined) is copied into its view and the view put back.
//  - no_sync(): forward/backward passes inside it accumulate into the views and communicate nothing; the first
//    pass outside it reduces the accumulated sum's average (PyTorch's no_sync).
//  - A parameter that gets no gradient in a synchronized step: with find_unused_parameters it counts as ready
//    with the gradient it holds (zero after zero_grad; found at forward by walking the output's graph, so its
//    bucket is not held back); without it, backward() throws PyTorch's message naming the parameters.
//  - Misuse is a ddpx::Error naming what and where: a parameter that is not float32 (ddpx reduces fp32
//    gradients), sparse or not contiguous; parameters added, removed or reallocated after wrapping; a backward
//    pass whose gradients arrive for one parameter twice.
//  - Every collective is watched (DdpOptions::comm_timeout_s): a killed or stalled rank ends the job with a
//    message naming the collective, never a hang (dist/watchdog.hpp).
//  - Each synchronized step is recorded (forward, backward, communication per bucket, the exposed part, the rest
//    of the loop); write_report(path) writes them as a run report for `ddpx report` and `ddpx predict`. On CUDA
//    the phases are host times and no bucket is timed (that would synchronize the host every step).
//  - Not thread-safe: one training thread per rank (autograd's own threads run the hooks).
#pragma once
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ddpx::torch {

struct DdpOptions {
  std::string backend = "auto";         // auto | gloo | mpi | nccl | self (auto: dist/backend_registry.hpp's rule)
  std::string comm_hook = "allreduce";  // allreduce | fp16 | bf16 | powersgd:R[:START] (ddp/comm_hook_factory.hpp)
  double bucket_cap_mb = 25;            // PyTorch's bucket_cap_mb
  double first_bucket_cap_mb = 1;       // the first bucket's cap (PyTorch: 1 MiB)
  bool find_unused_parameters = false;  // PyTorch's flag (see the guarantees)
  bool broadcast_buffers = true;        // rank 0's buffers copied to every rank before each forward (PyTorch's)
  bool overlap = true;                  // false: every bucket after the backward pass (bucket_cap_mb=2000's timing)
  double comm_timeout_s = 300;          // how long any collective may wait for a peer
  int report_warmup_steps = 1;          // synchronized steps left out of write_report()
  std::string model_name = "libtorch";  // the report's model name
  int64_t batch_per_rank = 0;           // the report's batch (images per rank per micro-batch; 0: unknown)
};

class NoSync;

// The module-independent part: everything but calling the module's forward.
class DdpEngine {
 public:
  DdpEngine(::torch::nn::Module& module, DdpOptions options);
  ~DdpEngine();
  DdpEngine(const DdpEngine&) = delete;
  DdpEngine& operator=(const DdpEngine&) = delete;

  void before_forward();
  // The images of this micro-batch on this rank (the forward's first tensor argument's first dimension), for the
  // report; DdpOptions::batch_per_rank wins when set.
  void set_batch(int64_t batch);
  // outputs: the tensors forward returned (walked for unused parameters when find_unused_parameters is set).
  void after_forward(const std::vector<at::Tensor>& outputs);
  NoSync no_sync();
  // Collective; rank 0 writes the run report (`ddpx report PATH`), other ranks write nothing.
  void write_report(const std::string& path);

  int rank() const;
  int world() const;
  const DdpOptions& options() const;
  // The bucket plan as a table (index, elements, MiB, tensors, first and last names).
  std::string bucket_table() const;
  // Synchronized steps completed (each reduced the gradients once).
  int64_t synchronized_steps() const;

 private:
  friend class NoSync;
  struct State;
  std::unique_ptr<State> state_;
};

// RAII: while it lives, forward/backward passes accumulate without communicating (PyTorch's `with ddp.no_sync()`).
class NoSync {
 public:
  explicit NoSync(DdpEngine& engine);
  ~NoSync();
  NoSync(const NoSync&) = delete;
  NoSync& operator=(const NoSync&) = delete;

 private:
  DdpEngine& engine_;
  bool was_enabled_;
};

namespace detail {
inline std::vector<at::Tensor> output_tensors(const at::Tensor& output) { return {output}; }
inline std::vector<at::Tensor> output_tensors(const std::vector<at::Tensor>& outputs) { return outputs; }
inline void push_if_tensor(std::vector<at::Tensor>& tensors, const at::Tensor& item) { tensors.push_back(item); }
template <class T>
void push_if_tensor(std::vector<at::Tensor>&, const T&) {}
template <class... T>
std::vector<at::Tensor> output_tensors(const std::tuple<T...>& outputs) {
  std::vector<at::Tensor> tensors;
  std::apply([&](const auto&... item) { (push_if_tensor(tensors, item), ...); }, outputs);
  return tensors;
}
template <class T>
std::vector<at::Tensor> output_tensors(const T&) { return {}; }  // walked for nothing: see after_forward
inline int64_t batch_of() { return 0; }
template <class First, class... Rest>
int64_t batch_of(const First& first, const Rest&...) {
  if constexpr (std::is_convertible_v<First, at::Tensor>) {
    const at::Tensor& t = first;
    return t.defined() && t.dim() > 0 ? t.size(0) : 0;
  } else {
    return 0;
  }
}
}  // namespace detail

template <class ModuleImpl>
class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<ModuleImpl> module, DdpOptions options = {})
      : module_(std::move(module)), engine_(*module_, std::move(options)) {}
  DistributedDataParallel(::torch::nn::ModuleHolder<ModuleImpl> module, DdpOptions options = {})
      : DistributedDataParallel(module.ptr(), std::move(options)) {}

  template <class... Args>
  auto forward(Args&&... args) {
    engine_.set_batch(detail::batch_of(args...));
    engine_.before_forward();
    auto output = module_->forward(std::forward<Args>(args)...);
    engine_.after_forward(detail::output_tensors(output));
    return output;
  }
  template <class... Args>
  auto operator()(Args&&... args) { return forward(std::forward<Args>(args)...); }

  NoSync no_sync() { return engine_.no_sync(); }
  void write_report(const std::string& path) { engine_.write_report(path); }
  ModuleImpl* operator->() { return module_.get(); }
  const std::shared_ptr<ModuleImpl>& module() const { return module_; }
  DdpEngine& engine() { return engine_; }

 private:
  std::shared_ptr<ModuleImpl> module_;
  DdpEngine engine_;
};

template <class ModuleImpl>
DistributedDataParallel(::torch::nn::ModuleHolder<ModuleImpl>, DdpOptions = {}) -> DistributedDataParallel<ModuleImpl>;
template <class ModuleImpl>
DistributedDataParallel(std::shared_ptr<ModuleImpl>, DdpOptions = {}) -> DistributedDataParallel<ModuleImpl>;

}  // namespace ddpx::torch
