// powersgd_timing: what a communication hook costs on the GPU over a real model's bucket plan (a measurement
// tool, not a test). Builds the model's gradient layout (default ViT-L/32, 25 MiB buckets, 1 MiB first bucket),
// fills a device gradient buffer with random values and, for each hook:
//   - memory: device memory the reducer and the hook hold after the warm-up steps, and with the captured graph
//     (cudaMemGetInfo differences);
//   - eager: the whole buffer marked ready at once (no backward to overlap), CUDA events on the compute stream
//     around begin_step .. finish_step, median of --steps;
//   - graph: the same step captured once as a CUDA graph and replayed --steps times (median);
//   - the slowest buckets of the last eager step (per-bucket comm-stream events) with their compressed shapes;
//   - for PowerSGD, each math phase over all buckets (no collectives), CUDA events between phases, median; once
//     ending with finish() (the bucket gets P Q^T, E updated) and once ending in compute_q_leaving_factors where a
//     bucket can (as under `ddpx train`, whose update reads the factors; E's update then moves into the next
//     begin, and the vectors' end into compute_q's launch: that run's last phase is empty).
// The communicator is NCCL with one rank (as `ddpx train --ddp` on one GPU): collectives are near-free, so the
// times are the hooks' own GPU work plus launch overheads.
// Usage: powersgd_timing [--model vit_l_32] [--hooks allreduce,powersgd:4:0] [--steps 20] [--bucket-mb 25]
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "comm_plan/bucket_plan.hpp"
#include "comm_plan/powersgd_layout.hpp"
#include "core/error.hpp"
#include "ddp/comm_hook_factory.hpp"
#include "ddp/device_scratch.hpp"
#include "ddp/powersgd_hook.hpp"
#include "ddp/powersgd_math.hpp"
#include "ddp/reducer.hpp"
#include "dist/nccl_communicator.hpp"
#include "model/vit/vit_config.hpp"
#include "model/vit/vit_layout.hpp"

namespace {

using namespace ddpx;

void check(cudaError_t status, const char* what) {
  DDPX_REQUIRE(status == cudaSuccess, "powersgd_timing: {} failed: {}", what, cudaGetErrorString(status));
}

struct Options {
  std::string model = "vit_l_32";
  std::vector<std::string> hooks = {"allreduce", "powersgd:4:0"};
  int steps = 20;
  double bucket_mb = 25;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    DDPX_REQUIRE(i + 1 < argc, "{} needs a value", flag);
    const std::string value = argv[++i];
    if (flag == "--model") o.model = value;
    else if (flag == "--steps") o.steps = std::stoi(value);
    else if (flag == "--bucket-mb") o.bucket_mb = std::stod(value);
    else if (flag == "--hooks") {
      o.hooks.clear();
      size_t start = 0;
      for (;;) {
        const size_t comma = value.find(',', start);
        o.hooks.push_back(value.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else fail("unknown flag {} (--model, --hooks, --steps, --bucket-mb)", flag);
  }
  return o;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

size_t used_device_bytes() {
  check(cudaDeviceSynchronize(), "synchronize");
  size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  return total - free_bytes;
}

std::string shapes_of(const BucketView& view, int64_t rank) {
  if (rank <= 0) return "";
  CompressionLayout layout = plan_compression(view, rank, 2.0);
  std::string out;
  for (const LowRankMatrix& m : layout.matrices) out += fmt::format(" {}x{}", m.rows, m.cols);
  return out + fmt::format(" +{} uncompressed", layout.uncompressed_elements);
}

void time_phases(const BucketPlan& plan, float* grads, const float* pristine, int64_t rank, int steps,
                 bool leave_factors) {
  DeviceScratch scratch;
  std::vector<std::unique_ptr<PowerSgdBucketMath>> maths;
  std::vector<float*> buckets;
  for (size_t b = 0; b < plan.size(); ++b) {
    const Bucket& bucket = plan[b];
    BucketView view{b, grads + bucket.begin, bucket.begin, bucket.end,
                    std::span<const GradTensor>(plan.tensors().data() + bucket.first_tensor,
                                                bucket.end_tensor - bucket.first_tensor),
                    GradDevice::cuda};
    CompressionLayout layout = plan_compression(view, rank, 2.0);
    maths.push_back(make_cuda_powersgd_math(layout, scratch));
    maths.back()->set_q(powersgd_initial_q(layout, 0, b, 0), nullptr);
    buckets.push_back(view.data);
  }
  const char* names[] = {"orthogonalize Q", "feedback + P = MQ", "orthogonalize P", "Q = M^T P", "P Q^T + error"};
  std::vector<std::vector<double>> times(5);
  std::vector<cudaEvent_t> events(6);
  for (cudaEvent_t& event : events) check(cudaEventCreate(&event), "cudaEventCreate");
  for (int step = 0; step < steps + 2; ++step) {
    check(cudaMemcpy(grads, pristine, plan.buckets().back().end * sizeof(float), cudaMemcpyDeviceToDevice), "reset");
    check(cudaEventRecord(events[0], nullptr), "record");
    for (auto& math : maths) math->orthogonalize_q(nullptr);
    check(cudaEventRecord(events[1], nullptr), "record");
    for (size_t b = 0; b < maths.size(); ++b) maths[b]->begin(buckets[b], nullptr);
    check(cudaEventRecord(events[2], nullptr), "record");
    for (auto& math : maths) math->orthogonalize_p(nullptr);
    check(cudaEventRecord(events[3], nullptr), "record");
    for (size_t b = 0; b < maths.size(); ++b) {
      if (leave_factors && maths[b]->can_leave_factors()) maths[b]->compute_q_leaving_factors(buckets[b], nullptr);
      else maths[b]->compute_q(buckets[b], nullptr);
    }
    check(cudaEventRecord(events[4], nullptr), "record");
    for (size_t b = 0; b < maths.size(); ++b)
      if (!(leave_factors && maths[b]->can_leave_factors())) maths[b]->finish(buckets[b], nullptr);
    check(cudaEventRecord(events[5], nullptr), "record");
    check(cudaEventSynchronize(events[5]), "synchronize");
    for (int phase = 0; phase < 5 && step >= 2; ++phase) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events[phase], events[phase + 1]), "elapsed");
      times[phase].push_back(ms);
    }
  }
  double total = 0;
  std::string line;
  for (int phase = 0; phase < 5; ++phase) {
    total += median(times[phase]);
    line += fmt::format("  {} {:.3f}", names[phase], median(times[phase]));
  }
  fmt::print("  PowerSGD rank {} math phases (eager, all buckets, ms{}):{}  = {:.3f}\n", rank,
             leave_factors ? ", leaving factors" : "", line, total);
  for (cudaEvent_t event : events) cudaEventDestroy(event);
}

void time_hook(const std::string& hook_spec, const VitLayout& layout, const BucketPlan& plan, float* grads,
               const float* pristine, int steps) {
  std::vector<GradTensor> tensors = plan.tensors();
  const size_t elements = layout.buffer_size();
  cudaStream_t compute = nullptr;
  check(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  auto comm = std::make_unique<NcclCommunicator>(NcclCommunicator::new_unique_id(), 0, 1, 0);
  const size_t before = used_device_bytes();
  size_t after = 0;
  {
    Reducer reducer(*comm, grads, elements, tensors, plan, make_comm_hook(hook_spec),
                    ReducerOptions{true, GradDevice::cuda});
    auto one_step = [&] {
      reducer.begin_step(true, compute);
      reducer.mark_ready(0, elements);
      reducer.finish_step();
    };
    auto timed = [&](auto&& body) {
      check(cudaMemcpyAsync(grads, pristine, elements * sizeof(float), cudaMemcpyDeviceToDevice, compute), "reset");
      check(cudaEventRecord(start, compute), "record");
      body();
      check(cudaEventRecord(stop, compute), "record");
      check(cudaEventSynchronize(stop), "synchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
      return double(ms);
    };
    for (int i = 0; i < 3; ++i) timed(one_step);
    after = used_device_bytes();
    std::vector<double> eager, graph;
    for (int i = 0; i < steps; ++i) eager.push_back(timed(one_step));
    std::vector<BucketTiming> buckets = reducer.bucket_timings();

    check(cudaMemcpyAsync(grads, pristine, elements * sizeof(float), cudaMemcpyDeviceToDevice, compute), "reset");
    cudaGraph_t captured = nullptr;
    cudaGraphExec_t replay = nullptr;
    check(cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal), "begin capture");
    one_step();
    check(cudaStreamEndCapture(compute, &captured), "end capture");
    check(cudaGraphInstantiate(&replay, captured, 0), "instantiate");
    size_t nodes = 0;
    check(cudaGraphGetNodes(captured, nullptr, &nodes), "graph nodes");
    const size_t with_graph = used_device_bytes();
    for (int i = 0; i < 2; ++i) timed([&] { check(cudaGraphLaunch(replay, compute), "replay"); });
    for (int i = 0; i < steps; ++i) graph.push_back(timed([&] { check(cudaGraphLaunch(replay, compute), "replay"); }));
    cudaGraphExecDestroy(replay);
    cudaGraphDestroy(captured);

    fmt::print("{:<16} eager {:8.3f} ms  graph {:8.3f} ms ({} nodes)  memory +{:.3f} GiB (+{:.3f} GiB with the "
               "graph) over {} buckets\n",
               hook_spec, median(eager), median(graph), nodes, double(after - before) / (1 << 30),
               double(with_graph - before) / (1 << 30), plan.size());
    std::sort(buckets.begin(), buckets.end(), [](const BucketTiming& a, const BucketTiming& b) {
      return a.end_ms - a.start_ms > b.end_ms - b.start_ms;
    });
    const int64_t rank = hook_spec.rfind("powersgd:", 0) == 0 ? std::stoll(hook_spec.substr(9)) : 0;
    double total = 0;
    for (const BucketTiming& t : buckets) total += t.end_ms - t.start_ms;
    fmt::print("  sum of bucket hook times {:.3f} ms; slowest buckets:\n", total);
    for (size_t i = 0; i < std::min<size_t>(4, buckets.size()); ++i) {
      const Bucket& b = plan[buckets[i].bucket];
      BucketView view{buckets[i].bucket, grads + b.begin, b.begin, b.end,
                      std::span<const GradTensor>(plan.tensors().data() + b.first_tensor,
                                                  b.end_tensor - b.first_tensor),
                      GradDevice::cuda};
      fmt::print("    bucket {:>3} {:>9} elements {:8.3f} ms{}\n", buckets[i].bucket, buckets[i].elements,
                 buckets[i].end_ms - buckets[i].start_ms, shapes_of(view, rank));
    }
  }
  if (hook_spec.rfind("powersgd:", 0) == 0)
    for (bool leave_factors : {false, true})
      time_phases(plan, grads, pristine, std::stoll(hook_spec.substr(9)), steps, leave_factors);
  comm.reset();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(compute);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse(argc, argv);
    const VitLayout layout(parse_vit_spec(options.model));
    std::vector<GradTensor> tensors;
    for (const TensorSlot& t : layout.tensors()) tensors.push_back(GradTensor{t.name, t.offset, t.numel, t.shape});
    BucketPlanOptions plan_options;
    plan_options.cap_bytes = static_cast<size_t>(options.bucket_mb * (1 << 20));
    const BucketPlan plan(tensors, plan_options);
    const size_t elements = layout.buffer_size();
    fmt::print("{}: {} gradients ({:.2f} GB fp32), {} buckets\n", options.model, layout.num_params(),
               double(elements) * 4 / 1e9, plan.size());

    std::vector<float> host(elements, 0.0f);
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (const TensorSlot& t : layout.tensors())
      for (size_t i = 0; i < t.numel; ++i) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        host[t.offset + i] = float(int64_t(state >> 40) - (int64_t(1) << 23)) * (1.0f / (1 << 23));
      }
    float *grads = nullptr, *pristine = nullptr;
    check(cudaMalloc(&grads, elements * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&pristine, elements * sizeof(float)), "cudaMalloc");
    check(cudaMemcpy(pristine, host.data(), elements * sizeof(float), cudaMemcpyHostToDevice), "upload");
    for (const std::string& hook : options.hooks) time_hook(hook, layout, plan, grads, pristine, options.steps);
    cudaFree(grads);
    cudaFree(pristine);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "powersgd_timing: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
