// vit_step_timing: per-phase times and steps/s of the CUDA ViT training step (a measurement tool, not a test).
// For each precision: build the model (torchvision init), GPU synthetic batch, 3 eager warm-up steps, then
//   - eager phases with CUDA events (median of --repeat): forward (eval), forward+backward, optimizer (SGD);
//   - the whole step (zero_grads + forward_backward + optimizer_step) captured once as a CUDA graph and replayed
//     --steps times: steps/s from events around the replays.
// With --single-step 1 it only runs one eager step per precision (for a kernel profiler such as ncu).
// Usage: vit_step_timing [--model vit_l_32] [--batch 32] [--steps 50] [--repeat 10] [--precisions fp32,tf32,bf16]
//                        [--single-step 0|1]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/cuda_check.hpp"
#include "model_cuda/device_buffer.hpp"
#include "model_cuda/vit/vit_cuda.hpp"
#include "kernels/synthetic_data.hpp"
#include "model/vit/vit_config.hpp"
#include "model/vit/vit_init.hpp"

namespace {

using namespace ddpx;

struct Options {
  std::string model = "vit_l_32";
  int64_t batch = 32;
  int steps = 50, repeat = 10;
  bool single_step = false;
  std::vector<Precision> precisions = {Precision::fp32, Precision::tf32, Precision::bf16};
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    DDPX_REQUIRE(i + 1 < argc, "{} needs a value", flag);
    const std::string value = argv[++i];
    if (flag == "--model") o.model = value;
    else if (flag == "--batch") o.batch = std::stoll(value);
    else if (flag == "--steps") o.steps = std::stoi(value);
    else if (flag == "--repeat") o.repeat = std::stoi(value);
    else if (flag == "--single-step") o.single_step = value == "1";
    else if (flag == "--precisions") {
      o.precisions.clear();
      size_t start = 0;
      while (start <= value.size()) {
        const size_t comma = value.find(',', start);
        o.precisions.push_back(parse_precision(value.substr(start, comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else fail("unknown flag {} (--model, --batch, --steps, --repeat, --precisions, --single-step)", flag);
  }
  return o;
}

class EventTimer {
 public:
  explicit EventTimer(cudaStream_t stream) : stream_(stream) {
    DDPX_CUDA_CHECK(cudaEventCreate(&start_));
    DDPX_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  template <typename F>
  float median_ms(int repeat, F&& work) {
    std::vector<float> times;
    for (int i = 0; i < repeat; ++i) {
      DDPX_CUDA_CHECK(cudaEventRecord(start_, stream_));
      work();
      DDPX_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      DDPX_CUDA_CHECK(cudaEventSynchronize(stop_));
      float ms = 0;
      DDPX_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_, stop_;
};

struct Row {
  Precision precision;
  float forward_ms, forward_backward_ms, optimizer_ms, graph_step_ms;
  size_t activation_bytes;
};

Row measure(const VitLayout& layout, const Options& o, Precision precision, cudaStream_t stream) {
  const VitConfig& c = layout.config();
  VitCuda model(layout, o.batch, precision, stream);
  std::vector<float> params(layout.buffer_size());
  init_vit_params(layout, params.data(), 1);
  DDPX_CUDA_CHECK(cudaMemcpy(model.params(), params.data(), params.size() * sizeof(float), cudaMemcpyHostToDevice));
  model.sync_low_precision_weights();
  DeviceBuffer<float> images(o.batch * c.image_numel(), "images"), logits(o.batch * c.num_classes, "logits"),
      loss(1, "loss");
  DeviceBuffer<int32_t> labels(o.batch, "labels");
  generate_synthetic_batch(images.get(), labels.get(), o.batch, c.image_numel(), c.num_classes, 1, 0, stream);
  const OptimizerSpec sgd{.kind = OptimizerKind::sgd, .lr = 1e-3f, .momentum = 0.9f};
  auto step = [&](int64_t n) {
    model.zero_grads();
    model.forward_backward(images.get(), labels.get(), o.batch, 1.f, loss.get());
    model.optimizer_step(sgd, n);
  };
  for (int i = 1; i <= (o.single_step ? 1 : 3); ++i) step(i);
  DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (o.single_step) return Row{precision, 0, 0, 0, 0, model.peak_activation_bytes()};

  EventTimer timer(stream);
  Row row{precision, 0, 0, 0, 0, model.peak_activation_bytes()};
  row.forward_ms = timer.median_ms(o.repeat, [&] { model.forward(images.get(), o.batch, logits.get()); });
  row.forward_backward_ms = timer.median_ms(o.repeat, [&] {
    model.forward_backward(images.get(), labels.get(), o.batch, 1.f, loss.get());
  });
  row.optimizer_ms = timer.median_ms(o.repeat, [&] { model.optimizer_step(sgd, 4); });

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  DDPX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  step(5);
  DDPX_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  DDPX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) DDPX_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  row.graph_step_ms = timer.median_ms(3, [&] {
                        for (int i = 0; i < o.steps; ++i) DDPX_CUDA_CHECK(cudaGraphLaunch(exec, stream));
                      }) /
                      static_cast<float>(o.steps);
  const float final_loss = loss.download()[0];
  DDPX_REQUIRE(std::isfinite(final_loss), "{}: loss is {} after the timed steps", precision_name(precision),
               final_loss);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    const VitLayout layout(parse_vit_spec(o.model));
    cudaStream_t stream = nullptr;
    DDPX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaDeviceProp prop{};
    DDPX_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("# vit_step_timing: %s, batch %lld, %s, %d graph replays per sample (median of 3)\n",
                layout.config().spec().c_str(), static_cast<long long>(o.batch), prop.name, o.steps);
    std::printf("%-9s %11s %15s %13s %14s %10s %14s\n", "precision", "forward_ms", "fwd+bwd_ms", "optimizer_ms",
                "graph_step_ms", "steps/s", "activations_GB");
    for (Precision p : o.precisions) {
      const Row r = measure(layout, o, p, stream);
      std::printf("%-9s %11.3f %15.3f %13.3f %14.3f %10.1f %14.2f\n", std::string(precision_name(p)).c_str(),
                  r.forward_ms, r.forward_backward_ms, r.optimizer_ms, r.graph_step_ms, 1000.f / r.graph_step_ms,
                  static_cast<double>(r.activation_bytes) / 1e9);
      std::fflush(stdout);
    }
    cudaStreamDestroy(stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vit_step_timing: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
