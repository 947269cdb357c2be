// TrainOptions: everything `ddpx train` can be told (flags, config files and `ddpx tune` outputs all end up
// here), with every mode already parsed into its type where the flags were read (cli/cmd_train.cpp): device,
// precision, data source, graph and overlap policies (train/run_modes.hpp), the backend (a BackendChoice of
// dist/backend_registry.hpp), the optimizer (optim/optimizer_spec.hpp) and the hook (comm_plan/hook_catalogue.hpp).
// No mode is compared as a string after that. validate() checks the values and their combinations and names the
// flag in every error; which device a backend serves is the registry's rule and message (require_serves).
// Components that need only part of it take a small struct of their own: the engines EngineOptions
// (train/engine_options.hpp), the distributed set-up DistOptions (train/dist_setup.hpp), the graph policy
// StepGraphOptions (train/step_graphs.hpp), the launcher LaunchTarget (cli/launch.hpp).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comm_plan/hook_catalogue.hpp"
#include "data/data_spec.hpp"
#include "data/dataset.hpp"
#include "dist/backend_registry.hpp"
#include "io/same_file.hpp"
#include "model/precision.hpp"
#include "optim/optimizer_spec.hpp"
#include "train/engine_options.hpp"
#include "train/recipe_options.hpp"
#include "train/run_modes.hpp"

namespace ddpx {

struct TrainOptions {
  // what to train
  Device device = Device::cpu;
  std::string model = "vit_small_test";  // --model as typed
  // The head's class count the run decided where --model names none and it differs from the spec's own: the
  // training data's, or --load's file's (train/data_classes.hpp); the model is made with it as a typed value
  // (make_run_model), never by editing the spec's text. Not a flag.
  std::optional<int64_t> model_classes;
  Precision precision = Precision::fp32;  // tf32 and bf16 need Device::cuda
  int64_t batch = 32;                     // per rank, per micro-batch
  // optimizer steps; the trainer's run plan (train/run_plan.hpp) resolves the length from this or --epochs
  int64_t steps = 100;
  int64_t epochs = 0;  // --epochs N (image sources, npy): steps = N x batches per epoch / grad_accum; 0: --steps
  // --lr-warmup-epochs N: the schedule's warm-up in epochs (train/run_plan.hpp); 0: --lr-warmup-steps decides
  int64_t lr_warmup_epochs = 0;
  // --repeated-augment R: torchvision's repeated-augmentation sampler (Note [Repeated augmentation],
  // data/epoch_sampler.hpp) for the training data; 0 or 1: off
  int64_t repeated_augment = 0;
  int64_t warmup_steps = 5;               // excluded from the throughput figures
  // --calibrate-steps N: with a reducer, up to N warm-up steps run without it during backward, to measure the
  // plain step DDP's cost is taken against (Note [Calibration steps], train/calibration.hpp); 0: off
  int64_t calibrate_steps = 3;
  uint64_t seed = 0;
  // data
  DataSpec data;              // --data, parsed once (data/data_spec.hpp); synthetic_device needs Device::cuda
  std::optional<DataSpec> val;  // --val: the held-out source (no shuffle, the eval transform)
  ImagePipelineSettings image_pipeline;  // --augment, --mean, --std, --max-pixels (image sources)
  NormalizeOn normalize_on = NormalizeOn::host;  // --normalize: where a CUDA run normalizes uint8 batches
  std::string images, labels;  // .npy input, taken in order (also in data.images/labels when data is npy)
  int workers = 0;      // loader threads; 0: chosen per rank (data/loader_workers.hpp)
  int cpu_threads = 0;  // --device cpu: BLAS threads per rank (0: the node's cores / its ranks)
  int prefetch = 0;  // ring slots; 0: workers + 2 (every worker busy, two batches ready)
  bool pin_loaders = false;  // --pin-loaders: loader threads on the cores near the GPU (data/loader_affinity.hpp)
  // argv of `ddpx train` as typed, for the run report (cmd_train fills it; empty when run_training() is called
  // directly). Not a flag.
  std::vector<std::string> command_line;
  // The training data's class names, label = index; filled from --data by run_training (train/data_classes.hpp),
  // empty for sources that name none. Not a flag.
  std::vector<std::string> class_names;
  // The training and --val data's files and folders (SampleSource::inputs()), filled with class_names: inputs no
  // output may overwrite or be written inside (require_distinct_paths). Not a flag.
  std::vector<FileRole> data_inputs;
  // The training data's fingerprint (data/sample_source.hpp's data_fingerprint(): samples, classes, a hash of the
  // file list or the pack/shard headers), filled with class_names; recorded in checkpoints and compared on
  // --resume (train/checkpointing.cpp). Empty for synthetic and npy data. Not a flag.
  std::string data_fingerprint;
  bool allow_data_change = false;  // --allow-data-change: resume on data whose fingerprint changed (recorded)
  // optimizer: --optimizer and its hyperparameter flags, parsed once (parse_optimizer_spec)
  OptimizerSpec optimizer;  // its schedule's horizon is the run plan's (train/run_plan.hpp); 0 until planned
  RecipeOptions recipe;     // --label-smoothing, --clip-grad-norm, --no-decay, --ema-decay, --mixup, --cutmix
  // the optimizer span by span during backward (on; automatic: only with a reducer) or after it
  OverlapPolicy optimizer_overlap = OverlapPolicy::automatic;
  // the weight-gradient GEMMs' output type (weight_grads_in_bf16)
  WeightGradPolicy weight_grads = WeightGradPolicy::automatic;
  // weights and checkpoints. resume: a checkpoint folder or file, or "auto" (see resume_checkpoint)
  std::string load, save, checkpoint_dir, resume;
  bool reset_head = false;  // --reset-head: --load all but the classifier head (io/param_safetensors.hpp)
  int64_t checkpoint_every = 0;
  bool checkpoint_every_epoch = false;  // and at each epoch's end (torchvision's --output-dir)
  int keep_checkpoints = 2;  // the newest K checkpoints stay in --checkpoint-dir (train/checkpointing.hpp)
  // numerics: stop when the loss exceeds this x max(first loss, 1) (train/numerics_guard.hpp); 0: never
  double divergence_ratio = 1e4;
  // data parallelism
  bool ddp = false;  // use the reducer even with one rank (measures DDP overhead)
  BackendChoice backend;  // --backend: a dist/backend_registry entry, or auto
  int ranks_per_gpu = 0;   // --ranks-per-gpu K: K ranks share a GPU (NCCL 2.30+); 0: one rank per GPU
  CommHookSpec comm_hook;  // --comm-hook with --powersgd-start folded in (one canonical spec)
  double bucket_mb = 25.0, first_bucket_mb = 1.0;
  bool no_overlap = false;
  int64_t grad_accum = 1;
  double comm_timeout_s = 300;
  // execution and analysis
  GraphPolicy cuda_graph = GraphPolicy::automatic;
  std::string profile_steps;  // "A:B": cudaProfilerStart/Stop window for nsys
  std::string report, trace;
  std::string eval_every;  // --eval-every N|epoch on --val; empty: the run plan decides (train/run_plan.hpp)
  std::string metrics;  // --metrics FILE: JSON Lines as the run goes (train/metrics_log.hpp)
  int64_t log_every = 10;
  bool quiet = false;
  std::vector<std::string> config_files;  // --config files read: inputs no output may overwrite
  // A torchvision command line (cli/torchvision_flags.hpp), for the run report: its settings in effect and the
  // ddpx flags they became; empty for ddpx's own.
  std::map<std::string, std::string> torchvision_settings;
  std::vector<std::string> torchvision_args;

  // Throws ddpx::Error naming the flag. Checks values, and every input and output path: outputs under
  // io/output_file's policy, inputs regular files, no output the same file as an input or another output. Pure:
  // creates nothing (the trainer creates and locks --checkpoint-dir, see train/run_outputs.hpp).
  // validate() = validate_flags() then validate_length(). The trainer calls them apart: validate_flags() before the
  // job opens (train/trainer.cpp: a mistyped flag never waits for a rendezvous), validate_length() after the run's
  // plan (train/run_plan.hpp) has set `steps` from --steps or --epochs at the job's world size.
  void validate() const;
  void validate_flags() const;   // every check that does not read the run's length
  void validate_length() const;  // the checks against `steps`: --steps, --profile-steps, --report vs --warmup
  void require_distinct_paths() const;  // part of validate(): outputs vs inputs and each other (io/same_file.hpp)
};

// Whether the optimizer runs span by span during the backward pass (Note [Optimizer overlapped with backward],
// train/step_engine.hpp): --optimizer-overlap on, or auto with a reducer. Measured on one H200 (ViT-L/32 bf16,
// 2026-12-01): with a reducer it saves the optimizer's time behind the buckets' communication (DDP at world 1
// 99.2 against 97.8 steps/s); without one it gains nothing in graph replays (99.3 against 99.4) and costs eager
// steps 8% (two more launches per block), hence auto.
// What --resume loads: "" for a fresh start, else a folder or file for io/checkpoint. --resume auto (which needs
// --checkpoint-dir D) is D when D holds a checkpoint (its newest: checkpoint.safetensors) and "" otherwise, so one
// command line serves the first start and every restart (torchrun --max_restarts, Slurm requeue). Every rank asks
// before its first step, when no rank can have written a checkpoint of this attempt yet.
std::string resume_checkpoint(const TrainOptions& options);

bool optimizer_overlaps(OverlapPolicy policy, bool with_reducer);
// Whether this run's updates overlap the backward (Note [Optimizer overlapped with backward]): the policy's answer,
// except with --clip-grad-norm (clipping needs the whole step's norm before any update) and, on CUDA, --no-decay
// (a cast hook's 16-bit wire is one update the decay runs cannot split). The trainer and the reducer's set-up ask
// this one function, so a reducer never updates spans of a step the trainer then updates again.
bool updates_overlap_backward(const TrainOptions& options, bool with_reducer);

// Whether the weight-gradient GEMMs write bf16, as PyTorch autocast's do (Note [bf16 weight gradients in their fp32
// slots], model_cuda/cuda_model.hpp): --weight-grads auto with --precision bf16 on --device cuda, no reducer that
// reads the buckets (they are fp32: any hook at more than one rank, and every hook but the allreduce at one,
// comm_hook_reads_bucket) and no --grad-accum (bf16 cannot be accumulated into). So `--ddp` at one rank with the
// allreduce hook computes what the plain run computes, bit for bit.
// Measured on one H200 (ViT-L/32 bf16 batch 32, docs/results.md, 2026-12-04): see there.
bool weight_grads_in_bf16(const TrainOptions& options, bool reducer_reads_gradients);
// Whether the run's reducer reads the gradient buffer: a communicator (--ddp, or more than one rank) whose hook
// reads its buckets at this world size (comm_plan/hook_catalogue.hpp, reads_bucket_alone).
bool reducer_reads_gradients(const TrainOptions& options, bool with_communicator, int world);

// The engine's part of a run. reducer_reads_gradients: the run attaches a reducer that reads the engine's
// gradients (reducer_reads_gradients above; weight_grads_in_bf16 decides from it).
EngineOptions engine_options(const TrainOptions& options, bool reducer_reads_gradients);
// CUDA with an image source and --normalize device: uint8 batches, normalized by the engine on the device.
bool normalizes_on_device(const TrainOptions& options);

}  // namespace ddpx
