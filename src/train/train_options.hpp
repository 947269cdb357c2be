// TrainOptions: everything `ddpx train` can be told, in one plain struct (flags, config files and `ddpx tune`
// outputs all end up here). validate() checks values and names the flag in every error.
#pragma once
#include <cstdint>
#include <string>

namespace ddpx {

struct TrainOptions {
  // what to train
  std::string device = "cpu";  // cpu | cuda
  std::string model = "vit_small_test";
  std::string precision = "fp32";  // fp32 | tf32 | bf16 (cuda); cpu is fp32
  int64_t batch = 32;              // per rank, per micro-batch
  int64_t steps = 100;             // optimizer steps
  int64_t warmup_steps = 5;        // excluded from the throughput figures
  uint64_t seed = 0;
  // data
  std::string data = "synthetic";  // synthetic | learnable | synthetic-device (cuda)
  std::string images, labels;      // .npy input, taken in order
  int workers = 4;
  int cpu_threads = 0;             // --device cpu: BLAS threads per rank (0: the node's cores / its ranks)
  int prefetch = 0;  // ring slots; 0: workers + 2 (every worker busy, two batches ready)
  // optimizer
  std::string optimizer = "sgd";
  double lr = 0.01, momentum = 0.0, weight_decay = 0.0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool nesterov = false;
  // weights and checkpoints
  std::string load, save, checkpoint_dir, resume;
  int64_t checkpoint_every = 0;
  // data parallelism
  bool ddp = false;  // use the reducer even with one rank (measures DDP overhead)
  std::string backend = "auto";  // auto | nccl | mpi | gloo
  std::string comm_hook = "allreduce";
  double bucket_mb = 25.0, first_bucket_mb = 1.0;
  bool no_overlap = false;
  int64_t grad_accum = 1;
  int64_t powersgd_start = 2;
  double comm_timeout_s = 300;
  // execution and analysis
  std::string cuda_graph = "auto";  // auto | on | off
  std::string profile_steps;        // "A:B": cudaProfilerStart/Stop window for nsys
  std::string report, trace;
  int64_t log_every = 10;
  bool quiet = false;

  void validate() const;  // throws ddpx::Error naming the flag
};

}  // namespace ddpx
