// CpuEngine: a model's fp32 CPU reference (Model::make_cpu) with the fused CPU optimizers, as a StepEngine.
// Guarantee: deterministic for a given thread count of OpenBLAS (set per rank at construction: --cpu-threads, else
// the node's cores shared by its ranks; see model/blas_threads.hpp); everything is synchronous, phase times are
// steady_clock measurements.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "core/internal_assert.hpp"
#include "dist/bootstrap.hpp"
#include "model/blas_threads.hpp"
#include "model/cross_entropy.hpp"
#include "model/no_decay.hpp"
#include "optim/grad_clip.hpp"
#include "optim/optimizer.hpp"
#include "optim/weight_average.hpp"
#include "train/step_engine.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

class CpuEngine : public StepEngine {
 public:
  CpuEngine(const Model& model, const EngineOptions& options, int ranks_on_node)
      : layout_(model.layout()),
        classes_(model.num_classes()),
        image_numel_(model.input_shape().numel()),
        input_shape_(model.input_shape()),
        options_(options),
        model_(model.make_cpu(options.batch)),
        params_(layout_.buffer_size(), 0.f),
        grads_(layout_.buffer_size(), 0.f),
        logits_(static_cast<size_t>(options.batch * classes_)),
        dlogits_(logits_.size()),
        numerics_(options.divergence_ratio) {
    options.optimizer.validate();
    const RecipeOptions& recipe = options.recipe;
    recipe.validate();
    if (recipe.no_decay) {
      no_decay_ = no_decay_spans(layout_);
      undecayed_ = options.optimizer;
      undecayed_.weight_decay = 0.f;
    }
    if (recipe.ema_decay != 0) weight_average_.emplace(recipe.ema_decay_in_use(), layout_.buffer_size());
    if (recipe.mix.enabled()) {
      mixed_images_.resize(static_cast<size_t>(options.batch * image_numel_));
      mixed_labels_.resize(static_cast<size_t>(options.batch));
    }
    for (const std::string& name : options.optimizer.state_names())
      state_.buffers.push_back({name, std::vector<float>(layout_.buffer_size(), 0.f)});
    const BlasThreadChoice choice = choose_blas_threads(
        options.cpu_threads, static_cast<int>(std::thread::hardware_concurrency()), ranks_on_node,
        usable_cpu_count(), process_environment());
    const int threads = apply_blas_threads(choice.threads);
    blas_ = threads > 0 ? fmt::format("OpenBLAS, {} thread{}: {}", threads, threads == 1 ? "" : "s", choice.source)
                        : std::string("BLAS");
  }

  std::string describe() const override { return fmt::format("cpu (fp32, {})", blas_); }
  bool is_cuda() const override { return false; }
  float* grad_buffer() override { return grads_.data(); }
  void* compute_stream() override { return nullptr; }

  void upload_params(const float* host) override { std::memcpy(params_.data(), host, params_.size() * 4); }
  void download_params(float* host) override { std::memcpy(host, params_.data(), params_.size() * 4); }
  HostOptimizerState download_optimizer_state() override {
    HostOptimizerState state = state_;
    if (weight_average_) {
      state.weight_average = weight_average_->values();
      state.weight_average_updates = weight_average_->updates();
    }
    return state;
  }
  void upload_optimizer_state(const HostOptimizerState& state) override {
    DDPX_REQUIRE(state.buffers.size() == state_.buffers.size(), "optimizer state has {} buffers, expected {}",
                 state.buffers.size(), state_.buffers.size());
    for (size_t i = 0; i < state.buffers.size(); ++i)
      DDPX_REQUIRE(state.buffers[i].first == state_.buffers[i].first &&
                       state.buffers[i].second.size() == state_.buffers[i].second.size(),
                   "optimizer state buffer '{}' does not match '{}'", state.buffers[i].first, state_.buffers[i].first);
    // The checkpoint bridge (train/checkpointing.cpp) refuses a resume whose --ema-decay differs from the file's.
    DDPX_INTERNAL_ASSERT(state.weight_average.empty() == !weight_average_ &&
                             (state.weight_average.empty() || state.weight_average.size() == params_.size()),
                         "weight average of {} elements uploaded to an engine {} one", state.weight_average.size(),
                         weight_average_ ? "with" : "without");
    state_ = state;
    state_.weight_average.clear();
    if (weight_average_) weight_average_->restore(state.weight_average, state.weight_average_updates);
  }
  void* allocate_host_batch(size_t bytes) override { return ::operator new(bytes); }
  void free_host_batch(void* p) override { ::operator delete(p); }

  void set_batch(const HostBatch& batch) override { batch_ = &batch; }
  void batch_consumed(const HostBatch&) override { batch_ = nullptr; }
  // Zeroing counts as optimizer time (PyTorch's optimizer.zero_grad()), as on the CUDA engine.
  void zero_grads() override {
    auto t0 = Clock::now();
    std::fill(grads_.begin(), grads_.end(), 0.f);
    zero_ms_ = ms_since(t0);
  }

  void forward_backward(float grad_scale, const ReadyFn& on_ready) override {
    DDPX_INTERNAL_ASSERT(batch_ != nullptr, "forward_backward without a batch");
    auto t0 = Clock::now();
    const RecipeOptions& recipe = options_.recipe;
    const float* images = batch_->images;
    ClassTargets targets{.labels = batch_->labels, .label_smoothing = recipe.label_smoothing};
    if (recipe.mix.enabled()) {
      // One draw per batch, from the batch's index: every rank mixes alike, and a resumed run draws the same.
      Rng rng(options_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(batch_->step) + 1);
      const InputShape shape = input_shape_;
      const MixDraw draw = draw_mix(rng, recipe.mix, shape.image_size, shape.image_size);
      std::copy(batch_->images, batch_->images + batch_->batch * image_numel_, mixed_images_.begin());
      apply_mix(mixed_images_.data(), batch_->labels, mixed_labels_.data(), batch_->batch, shape.channels,
                shape.image_size, shape.image_size, draw);
      images = mixed_images_.data();
      targets.mixed_labels = draw.kind == MixKind::none ? nullptr : mixed_labels_.data();
      targets.mix = draw.lambda;
    }
    model_->forward(params_.data(), images, batch_->batch, logits_.data());
    loss_ = targets.mixed_labels == nullptr && targets.label_smoothing == 0
                ? softmax_cross_entropy<float>(logits_.data(), batch_->labels, batch_->batch, classes_,
                                               dlogits_.data(), grad_scale)
                : softmax_cross_entropy<float>(logits_.data(), targets, batch_->batch, classes_, dlogits_.data(),
                                               grad_scale);
    times_.forward = ms_since(t0);
    auto t1 = Clock::now();
    model_->backward(params_.data(), dlogits_.data(), grads_.data(), on_ready);
    times_.backward = ms_since(t1);
  }

  void optimizer_step(int64_t step) override {
    auto t0 = Clock::now();
    // Every step: the loss and the gradients about to be applied (after the all-reduce). A bad step is not
    // applied, so the weights stay those of the last good step.
    numerics_.observe(step, loss_, grads_);
    if (numerics_.first_problem()) return;
    // After the reduction (the trainer calls this once the buckets are averaged): every rank clips alike.
    if (options_.recipe.clip_grad_norm != 0)
      grad_norm_ = clip_grad_norm_cpu(grads_.data(), grads_.size(), static_cast<float>(options_.recipe.clip_grad_norm));
    update(step, 0, params_.size());
    update_weight_average(step);
    state_.step = step;
    times_.optimizer = ms_since(t0) + zero_ms_;
  }

  // The spans run inside the backward pass (or on the reducer's thread): their time is part of those phases.
  void begin_span_updates(int64_t step) override { span_step_ = step; }
  void optimizer_span(size_t begin, size_t end, void*, const ReducedGradients* wire) override {
    // The host launcher never leaves a result on the wire: its hooks widen on the communication thread.
    DDPX_INTERNAL_ASSERT(wire == nullptr, "CPU engine: span [{}, {}) came with 16-bit gradients", begin, end);
    update(span_step_, begin, end);
  }
  void finish_span_updates() override {
    // The spans are applied already: a bad step is noted here, the run stops at the trainer's next check, and
    // nothing non-finite is ever saved (io/tensor_integrity.hpp).
    numerics_.observe(span_step_, loss_, grads_);
    update_weight_average(span_step_);
    state_.step = span_step_;
    times_.optimizer = zero_ms_;
  }

  float last_loss() override { return loss_; }
  std::optional<NumericsProblem> numerics_problem() override { return numerics_.first_problem(); }

  std::vector<float> eval_logits(const float* images, int64_t batch) override {
    return logits_with(params_.data(), images, batch);
  }
  std::optional<std::vector<float>> weight_average_logits(const float* images, int64_t batch) override {
    if (!weight_average_) return std::nullopt;
    return logits_with(weight_average_->values().data(), images, batch);
  }
  std::optional<std::vector<float>> weight_average() override {
    if (!weight_average_) return std::nullopt;
    return weight_average_->values();
  }
  std::optional<float> last_grad_norm() override {
    return options_.recipe.clip_grad_norm != 0 ? std::optional<float>(grad_norm_) : std::nullopt;
  }

  EnginePhaseTimes last_phase_times() override { return times_; }

 private:
  // --ema-decay, on --ema-every's cadence; --ema-copy-epochs: the next update copies again (optim/ema_cadence.hpp).
  void update_weight_average(int64_t step) {
    const EmaCadence& cadence = options_.recipe.ema_cadence;
    if (!weight_average_ || !cadence.updates_at(step)) return;
    weight_average_->update(params_.data(), params_.size());
    if (cadence.copies_at(step)) weight_average_->restart();
  }

  std::vector<float> logits_with(const float* params, const float* images, int64_t batch) {
    std::vector<float> logits(static_cast<size_t>(batch * classes_));
    for (int64_t start = 0; start < batch; start += options_.batch) {
      const int64_t n = std::min(options_.batch, batch - start);
      model_->forward(params, images + start * image_numel_, n, logits.data() + start * classes_);
    }
    return logits;
  }

  // The step's update of elements [begin, end): element-wise, so spans of one step equal the whole step. With
  // --no-decay the exempt tensors' runs are updated with weight decay 0 (model/no_decay.hpp).
  void update(int64_t step, size_t begin, size_t end) {
    const auto update_run = [&](size_t run_begin, size_t run_end, bool decay) {
      std::vector<float*> state;
      for (auto& [name, values] : state_.buffers) state.push_back(values.data() + run_begin);
      optimizer_step_cpu(decay ? options_.optimizer : undecayed_, params_.data() + run_begin,
                         grads_.data() + run_begin, state, run_end - run_begin, step);
    };
    if (!options_.recipe.no_decay) return update_run(begin, end, true);
    for_each_decay_run(begin, end, no_decay_, update_run);
  }

  const FlatLayout& layout_;
  int64_t classes_, image_numel_;
  InputShape input_shape_;
  EngineOptions options_;
  std::unique_ptr<CpuModel> model_;
  std::vector<float> params_, grads_, logits_, dlogits_;
  HostOptimizerState state_;
  NumericsWatch numerics_;
  const HostBatch* batch_ = nullptr;
  float loss_ = 0;
  EnginePhaseTimes times_;
  double zero_ms_ = 0;  // the last zero_grads()
  int64_t span_step_ = 0;  // the step begin_span_updates() opened
  // the recipe (train/recipe_options.hpp): exempt spans and the spec without decay, the weight EMA, mixing buffers
  std::vector<BufferSpan> no_decay_;
  OptimizerSpec undecayed_;
  std::optional<WeightAverage> weight_average_;
  std::vector<float> mixed_images_;
  std::vector<int32_t> mixed_labels_;
  float grad_norm_ = 0;
  std::string blas_;  // "OpenBLAS, 1 thread: 2 hardware threads / 2 ranks on this node"
};

}  // namespace

std::unique_ptr<StepEngine> make_cpu_engine(const Model& model, const EngineOptions& options,
                                            int ranks_on_node) {
  const FlatLayout& layout = model.layout();
  // Everything the engine and the trainer hold for one rank: activations, then weights, gradients, the trainer's
  // host copy and the optimizer's state buffers, in fp32. Refused before anything is touched: zero-filling more
  // than the machine has would get the process OOM-killed (exit 137, no message) instead of an error.
  const auto states = static_cast<double>(options.optimizer.state_names().size());
  const double bytes = model.cpu_activation_bytes(options.batch) +
                       static_cast<double>(layout.buffer_size()) * sizeof(float) * (3 + states);
  const double memory = physical_memory_bytes();
  DDPX_REQUIRE(memory <= 0 || bytes < 0.8 * memory / std::max(1, ranks_on_node),
               "model '{}' with batch {} needs about {:.1f} GiB per rank on the CPU ({} rank(s) on this node), more "
               "than this machine's {:.1f} GiB can hold; lower --batch or use a smaller model",
               layout.spec(), options.batch, bytes / (1 << 30), ranks_on_node, memory / (1 << 30));
  return std::make_unique<CpuEngine>(model, options, ranks_on_node);
}

}  // namespace ddpx
