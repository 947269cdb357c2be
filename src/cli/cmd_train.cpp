// `ddpx train`: flags -> TrainOptions -> run_training (or, with --nproc-per-node N, start N workers that do).
// The modes are read as text and parsed here, once, into their types (TrainOptions' header); the optimizer's
// hyperparameter flags go to parse_optimizer_spec, the hook's two spellings of PowerSGD's start to
// parse_comm_hook_spec.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/arg_lists.hpp"
#include "cli/commands.hpp"
#include "cli/flag_group.hpp"
#include "cli/launch.hpp"
#include "cli/recipe_flags.hpp"
#include "cli/torchvision_flags.hpp"
#include "comm_plan/hook_catalogue.hpp"
#include "core/error.hpp"
#include "data/data_sources.hpp"
#include "dist/bootstrap.hpp"
#include "dist/backend_registry.hpp"
#include "model/model_registry.hpp"
#include "train/trainer.hpp"

namespace ddpx::cli {

namespace {

// The mode flags as typed, before parsing (defaults as `ddpx train --help` shows them).
struct ModeFlags {
  std::string device = "cpu", precision = "fp32", data = "synthetic", optimizer = "sgd";
  std::string optimizer_overlap = "auto", backend = "auto", comm_hook = "allreduce", cuda_graph = "auto";
  std::string weight_grads = "auto";
  std::string val, augment = "auto", mean, std, normalize = "host", shuffle_buffer = "auto";  // image sources
  std::string jpeg_scaled_decode = "on";
  int64_t powersgd_start = 2;
};

// The hyperparameter flags, registered without a variable of their own: parse_optimizer_spec asks which were
// given (on the command line or in a --config file). Defaults shown are the spec's.
void add_optimizer_flags(CLI::App* cmd, const std::string& group) {
  const OptimizerSpec sgd = optimizer_defaults(OptimizerKind::sgd), adamw = optimizer_defaults(OptimizerKind::adamw);
  const auto add = [&](const char* flag, const std::string& help) {
    const std::string description = help;  // CLI11 takes a const description (a non-const one is a variable)
    cmd->add_option(flag, description)->check(CLI::Validator(CLI::Number).description(""))->type_name("FLOAT")->group(group);
  };
  add("--lr", fmt::format("learning rate (default: adamw {}, as PyTorch's AdamW; sgd {}, which ddpx's recipes and tests "
                          "were tuned with, where PyTorch's SGD has 1e-3; in a torchvision command line 0.1, "
                          "train.py's, as its other defaults)", adamw.lr, sgd.lr));
  add("--momentum", fmt::format("SGD momentum (default {}: plain SGD, as PyTorch's)", sgd.momentum));
  add("--dampening", fmt::format("SGD dampening: momentum takes (1 - dampening) of each gradient, as PyTorch's "
                                 "(default {})", sgd.dampening));
  const std::string nesterov = "SGD Nesterov momentum";
  cmd->add_flag("--nesterov", nesterov)->group(group);
  add("--weight-decay", fmt::format("SGD L2 / AdamW decoupled weight decay (default: sgd {}, adamw {}: PyTorch's)",
                                    sgd.weight_decay, adamw.weight_decay));
  add("--beta1", fmt::format("AdamW beta1 (default {})", adamw.beta1));
  add("--beta2", fmt::format("AdamW beta2 (default {})", adamw.beta2));
  add("--eps", fmt::format("AdamW epsilon (default {})", adamw.eps));
}

OptimizerSpec optimizer_spec_of(CLI::App* cmd, const std::string& name) {
  return parse_optimizer_spec(name, [cmd](std::string_view flag) -> std::optional<double> {
    const CLI::Option* option = cmd->get_option_no_throw(std::string(flag));
    if (option == nullptr || option->count() == 0) return std::nullopt;
    if (flag == "--nesterov") return option->as<bool>() ? 1.0 : 0.0;
    return option->as<double>();
  });
}

// torchvision's --train-crop-size and --val-crop-size are the model's input here (ddpx's models take one size).
void check_torchvision_crops(const TorchvisionTranslation& torchvision, const std::string& model) {
  const int64_t size = make_model_from_flag("--model", model)->input_shape().image_size;
  for (const auto& [flag, crop] : {std::pair{"--train-crop-size", torchvision.train_crop},
                                   std::pair{"--val-crop-size", torchvision.val_crop}})
    DDPX_REQUIRE(crop == 0 || crop == size,
                 "{} {}: ddpx crops to the model's image size, {} for --model {}; give {} {} (or a model of that "
                 "size: NAME:image={})", flag, crop, size, model, flag, size, crop);
}

}  // namespace

Command add_train_command(CLI::App* cmd) {
  auto o = std::make_shared<TrainOptions>();
  auto modes = std::make_shared<ModeFlags>();
  auto nproc = std::make_shared<int>(0);
  auto nodes = std::make_shared<NodeFlags>();
  auto recipe = std::make_shared<RecipeFlags>();
  cmd->set_config("--config", "", "read flags from a file (key = value per line, e.g. written by `ddpx tune`)");
  // A later flag overrides an earlier one (and a --config file), as users of scripts expect.
  cmd->option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  const FlagGroup what(cmd, "What to train");
  what.option("--device", modes->device, "cpu (fp32 reference engine, OpenBLAS) or cuda");
  what.option("--model", o->model, model_names_help() + "; any name can take overrides (NAME:key=value,...)");
  what.option("--precision", modes->precision,
              "fp32 (true fp32) | tf32 (TF32 matrix units, attention included) | bf16 (bf16 compute, fp32 master "
              "weights and gradients, like autocast); tf32 and bf16 need --device cuda. torchvision's --amp becomes bf16 "
              "on cuda (its fp16 with a GradScaler is not built; on --device cpu it stays fp32)");
  what.option("--weight-grads", modes->weight_grads,
              "auto | fp32: the type the weight-gradient GEMMs write. auto: bf16 (as autocast rounds them) with "
              "--precision bf16 when no reducer reads the gradients and without --grad-accum, else fp32 "
              "(docs/cli.md says when and what it gains). fp32: always, more precise than autocast");
  what.option("--batch", o->batch, "images per rank per micro-batch");
  what.option("--steps", o->steps,
              "optimizer steps (a resumed run continues up to this step); docs/cli.md says how the run's length is "
              "resolved");
  what.option("--epochs", o->epochs,
              "image sources and --images: train N epochs instead of --steps (N x the batches each rank runs per "
              "epoch / --grad-accum). Epochs follow DistributedSampler: the order is shuffled from (seed, epoch), "
              "padded by repeating its first samples to a multiple of the ranks, each rank takes every world-th, and "
              "each rank's last partial batch is dropped, so every rank runs the same number of batches");
  what.option("--warmup", o->warmup_steps, "steps excluded from throughput and the breakdown");
  what.option("--calibrate-steps", o->calibrate_steps,
              "with DDP: the last N warm-up steps reduce after the backward instead of during it (same weights), "
              "to time the plain step DDP's cost is measured against (odd, so the median is one step; CUDA "
              "graphs need --warmup 9; 0: off)");
  what.option("--seed", o->seed, "seed for initialization and synthetic data");

  const FlagGroup data(cmd, "Data");
  CLI::Option* data_flag = data.option("--data", modes->data, data_sources_help());
  data.option("--val", modes->val,
              "held-out data, any --data source (e.g. idx:/usr/share/datasets/fashion-mnist:test, folder:DIR/val): "
              "in order, no shuffle, resize + center crop");
  data.option("--augment", modes->augment,
              "image sources: auto (crop-flip for folder photographs, resize for idx) | crop-flip (torchvision's "
              "RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3)) + RandomHorizontalFlip) | resize (Resize "
              "to int(size / 0.875) for photographs, as torchvision, to size for idx, + CenterCrop(size)); "
              "antialiased bilinear");
  data.option("--val-resize", o->image_pipeline.eval_resize,
              "folder, pack and wds --val: the eval transform's resize side before the center crop to the model's "
              "size (torchvision's --val-resize-size; at least the model's image size; 0, the default: "
              "int(size / 0.875), 256 for 224)");
  data.option("--mean", modes->mean,
              "image sources: per-channel mean of torchvision's Normalize, comma-separated (default ImageNet's "
              "0.485,0.456,0.406; one-channel models 0.449)");
  data.option("--std", modes->std,
              "image sources: per-channel std of Normalize (default 0.229,0.224,0.225; one-channel models 0.226)");
  data.option("--normalize", modes->normalize,
              "image sources with --device cuda: host (the loader threads normalize to float32 and the float "
              "batch is copied, the default) | device (the uint8 batch is copied, a quarter of the bytes, and "
              "normalized by a kernel on the copy stream)");
  data.option("--jpeg-scaled-decode", modes->jpeg_scaled_decode,
              "on | off: decode a JPEG crop at least 5x the model's input at 1/2, 1/4 or 1/8 scale in the DCT domain "
              "(faster; within 1.5 levels on average of a full decode, docs/cli.md) or always at full size (PIL's "
              "pixels, as torchvision)");
  data.option("--max-pixels", o->image_pipeline.max_pixels,
              "image sources: refuse an image whose header claims more pixels (a decompression bomb) before "
              "allocating it (default 178956970, PIL's limit)");
  data.option("--shuffle-buffer", modes->shuffle_buffer,
              "wds: samples stream (shards in a shuffled order, each front to back) through WebDataset's shuffle(N) "
              "buffer of N samples: each incoming sample replaces a random slot, whose sample goes next; a pure "
              "function of (seed, epoch), so resumes stay exact. N >= the data's size: a full shuffle; 0 or 1: off; "
              "auto: 1000, raised to 10 x the longest run of one class in the shards (a class-sorted shard), at most "
              "the data's size");
  data.option("--images", o->images,
              ".npy images [N, C, H, W] float32 (with --labels), in epochs as --epochs says but unshuffled; "
              "--batch at most N / ranks");
  data.option("--labels", o->labels, ".npy labels [N] int64/int32");
  data.option("--workers", o->workers,
              "loader threads producing batches into pinned host memory (0, the default: GPU ranks use half of "
              "their share of the node's CPUs, 1 to 16; CPU ranks use 2). Threads, where torchvision's -j/--workers are "
              "processes; in a torchvision command line the default is its 16");
  data.option("--prefetch", o->prefetch,
              "pinned batches in the loader ring (0: workers + 2, so every worker has a slot)");
  data.flag("--pin-loaders", o->pin_loaders,
            "--device cuda: pin the loader threads to the cores hwloc says are near the rank's GPU (those of them "
            "this process may use); off by default until measured on a GPU; a CPU run pins nothing");

  what.option("--cpu-threads", o->cpu_threads,
              "--device cpu: OpenBLAS threads per rank (0: the node's hardware threads shared out by the ranks "
              "on it, unless OPENBLAS_NUM_THREADS or OMP_NUM_THREADS is set)");

  const FlagGroup opt(cmd, "Optimizer");
  opt.option("--optimizer", modes->optimizer, "sgd | adamw (fused over the flat parameter buffer)");
  add_optimizer_flags(cmd, opt.name());
  opt.option("--optimizer-overlap", modes->optimizer_overlap,
             "auto | on | off: update each block's parameters during the backward pass, as soon as its "
             "gradients are final (reduced, with DDP), instead of all after it; same weights bit for bit. auto: "
             "only with DDP, where it hides the update behind communication (docs/cli.md has the measurements); "
             "off shows the optimizer as a phase of its own");

  add_recipe_flags(cmd, *recipe);

  const FlagGroup ckpt(cmd, "Weights and checkpoints");
  ckpt.option("--load", o->load, "start from these weights (.safetensors with torchvision names)");
  ckpt.option("--save", o->save,
              "write the final weights here (.safetensors, torchvision names, a CRC-32 per tensor; written "
              "atomically, like every output: see the end of this help)");
  ckpt.option("--checkpoint-dir", o->checkpoint_dir,
              "folder for resumable checkpoints (created, checked and locked against a second run before "
              "training; docs/cli.md says how checkpoints are written and committed)");
  ckpt.option("--checkpoint-every", o->checkpoint_every, "checkpoint every K steps (and at the end)");
  ckpt.flag("--checkpoint-every-epoch", o->checkpoint_every_epoch,
            "runs in epochs: checkpoint at the end of each epoch too (torchvision's --output-dir does)");
  ckpt.option("--keep-checkpoints", o->keep_checkpoints,
              "keep the newest K checkpoints (2: a damaged newest still leaves one to resume from)");
  ckpt.option("--resume", o->resume,
              "continue from the checkpoint in this folder (or one file: D/checkpoint-<step>.safetensors); auto: "
              "from --checkpoint-dir's newest if it has one, else from step 0 (for torchrun --max_restarts, "
              "Slurm requeue). torchvision's --resume FILE.pth is not one: a ddpx run resumes its own checkpoints");

  ckpt.flag("--allow-data-change", o->allow_data_change,
            "with --resume: continue although files of --data were added, removed or replaced since the checkpoint "
            "(recorded in the run report); other class names are refused even so");

  const FlagGroup dp(cmd, "Data parallelism");
  dp.option("--nproc-per-node,--nproc_per_node", *nproc, "start this many worker processes on this node (one per GPU)")
      ->check(CLI::Range(1, 1024));
  add_node_flags(cmd, *nodes, dp.name());
  dp.flag("--ddp", o->ddp, "use the gradient reducer even with one rank (measures DDP's own overhead)");
  dp.option("--backend", modes->backend,
            backend_help() + " (the communication backend, not torchvision's --backend PIL|tensor)");
  dp.option("--ranks-per-gpu", o->ranks_per_gpu,
            "K ranks share each GPU (device = local rank / K; needs NCCL 2.30+, sets "
            "NCCL_MULTI_RANK_GPU_ENABLE=1); default one rank per GPU");
  std::string hook_help;
  for (const CommHookEntry& hook : comm_hooks())
    hook_help += fmt::format("{}{}: {}", hook_help.empty() ? "" : " | ", hook.syntax, hook.help);
  dp.option("--comm-hook", modes->comm_hook, hook_help);
  dp.option("--bucket-mb", o->bucket_mb, "gradient bucket cap in MB (smaller buckets overlap backward more)");
  dp.option("--first-bucket-mb", o->first_bucket_mb, "cap of the first bucket (launched earliest)");
  dp.flag("--no-overlap", o->no_overlap, "reduce everything after the backward pass, in one bucket");
  dp.option("--grad-accum", o->grad_accum, "micro-batches per optimizer step; no communication on the first K-1");
  CLI::Option* powersgd_start_flag =
      dp.option("--powersgd-start", modes->powersgd_start,
                "START of --comm-hook powersgd:R (plain all-reduce before this step, PowerSGD's warm-up); an "
                "explicit powersgd:R:START wins. Default: the first step after --lr-warmup-steps, as PyTorch's "
                "PowerSGD documentation advises (compress only after the learning-rate warm-up), and step 2 "
                "in a run without one");
  dp.option("--comm-timeout", o->comm_timeout_s,
            "seconds any rank may wait in one collective, from start-up (communicator creation, agreement, "
            "broadcast) to the end (report gather, MPI_Finalize), before the job is aborted naming the rank(s) "
            "that did not arrive");

  const FlagGroup an(cmd, "Execution and analysis");
  an.option("--cuda-graph", modes->cuda_graph, "auto | on | off: capture the whole step after warm-up");
  an.option("--profile-steps", o->profile_steps,
            "A:B: cudaProfilerStart/Stop around steps A..B (nsys --capture-range=cudaProfilerApi)");
  an.option("--report", o->report, "write the run report (config, per-step breakdown, buckets) as JSON");
  an.option("--trace", o->trace, "write a Chrome-trace/Perfetto timeline (all ranks merged)");
  an.option("--log-every", o->log_every, "progress line every K steps");
  an.option("--divergence-ratio", o->divergence_ratio,
            "stop when the loss exceeds R x max(first loss, 1) (0: never). A non-finite loss or gradient "
            "stops the run at any R; every step is checked (CUDA: on the device, read at progress lines, "
            "checkpoints and the end)");
  an.flag("--quiet", o->quiet, "no progress lines (the summary, breakdown and verdict still print)");

  // Integer flags take whole numbers only: CLI11 would clamp 1e20-style digit strings and wrap --seed -1.
  for (const char* name : {"--batch", "--steps", "--warmup", "--calibrate-steps", "--workers", "--prefetch",
                           "--cpu-threads", "--checkpoint-every", "--keep-checkpoints", "--grad-accum", "--log-every", "--lr-warmup-steps",
                           "--seed", "--nproc-per-node", "--nnodes", "--node-rank", "--master-port",
                           "--ranks-per-gpu", "--max-pixels", "--epochs", "--lr-warmup-epochs", "--val-resize"}) {
    const bool allow_negative = std::string_view(name) != "--seed";
    cmd->get_option(name)->check(CLI::Validator(
        [allow_negative](std::string& text) { return whole_number_problem(text, allow_negative); }, "INT"));
  }

  return {cmd, [o, modes, nproc, nodes, recipe, data_flag, powersgd_start_flag, cmd] {
            // Every mode parsed once, here; flags of the other optimizer are an error, not silently ignored.
            o->device = parse_device(modes->device);
            o->precision = parse_precision(modes->precision);
            o->data = parse_data_spec(modes->data, DataOrigin::train_data);
            DDPX_REQUIRE(o->epochs == 0 || cmd->get_option("--steps")->count() == 0,
                         "--epochs {} and --steps {}: give one (--epochs sets the steps from the data's size)",
                         o->epochs, o->steps);
            // 0 is the API's "not given" (TrainOptions::epochs); typed, it would silently train --steps' default.
            DDPX_REQUIRE(o->epochs > 0 || cmd->get_option("--epochs")->count() == 0,
                         "--epochs {}: give a positive number of epochs (or --steps N)", o->epochs);
            if (!modes->val.empty()) o->val = parse_data_spec(modes->val, DataOrigin::train_val);
            o->image_pipeline.augmentation = parse_augmentation(modes->augment);
            o->image_pipeline.shuffle_buffer = parse_shuffle_buffer(modes->shuffle_buffer);
            o->normalize_on = parse_normalize_on(modes->normalize);
            DDPX_REQUIRE(modes->jpeg_scaled_decode == "on" || modes->jpeg_scaled_decode == "off",
                         "--jpeg-scaled-decode '{}' is not known; choose on or off", modes->jpeg_scaled_decode);
            o->image_pipeline.dct_scaling = modes->jpeg_scaled_decode == "on";
            if (!modes->mean.empty()) o->image_pipeline.normalization.mean = parse_float_list(modes->mean, "--mean");
            if (!modes->std.empty()) o->image_pipeline.normalization.std = parse_float_list(modes->std, "--std");
            o->optimizer = optimizer_spec_of(cmd, modes->optimizer);
            apply_recipe_flags(*recipe, *o);
            o->optimizer_overlap = parse_overlap_policy(modes->optimizer_overlap);
            o->weight_grads = parse_weight_grad_policy(modes->weight_grads);
            o->backend = parse_backend(modes->backend);
            // See --powersgd-start's help: after the learning-rate warm-up unless given.
            const int64_t powersgd_start = powersgd_start_flag->count() > 0
                                               ? modes->powersgd_start
                                               : std::max<int64_t>(2, recipe->lr_warmup_steps + 1);
            o->comm_hook = parse_comm_hook_spec(modes->comm_hook, powersgd_start);
            o->cuda_graph = parse_graph_policy(modes->cuda_graph);
            DDPX_REQUIRE(data_flag->count() == 0 || o->images.empty(),
                         "--data {} and --images {}: give one (--images/--labels train on those files, --data "
                         "names a source)", modes->data, o->images);
            if (!o->images.empty() || o->data.source == DataSource::npy) {
              o->data.source = DataSource::npy;
              o->data.images = o->images;
              o->data.labels = o->labels;
            }
            if (const CLI::Option* config = cmd->get_config_ptr(); config != nullptr && config->count() > 0)
              o->config_files = config->as<std::vector<std::string>>();
            DDPX_REQUIRE(o->image_pipeline.eval_resize >= 0 && o->image_pipeline.eval_resize <= 65536,
                         "--val-resize {}: give a side in pixels, at most 65536 (0: int(size / 0.875))",
                         o->image_pipeline.eval_resize);
            const TorchvisionTranslation& torchvision = remembered_torchvision_translation();
            if (torchvision.torchvision) check_torchvision_crops(torchvision, o->model);
            // torchvision's --output-dir is made if missing (ddpx's outputs go in it), once, before any rank starts.
            if (!torchvision.output_dir.empty() && !std::filesystem::is_directory(torchvision.output_dir)) {
              std::error_code error;
              std::filesystem::create_directories(torchvision.output_dir, error);
              DDPX_REQUIRE(!error || std::filesystem::is_directory(torchvision.output_dir),
                           "--output-dir {}: cannot create the folder ({})", torchvision.output_dir, error.message());
            }
            if (start_workers_here(*nproc, *nodes)) return launch_workers(*nproc, launch_target(*o), *nodes);
            o->command_line = remembered_command_line();  // for the run report
            if (torchvision.torchvision) {
              o->torchvision_settings = {torchvision.settings.begin(), torchvision.settings.end()};
              o->torchvision_args = torchvision.ddpx_args;
              // Once per job: by a single process, or by rank 0 of the ranks a launcher started.
              if (const std::optional<LaunchedRank> launched = launched_rank(); !launched || launched->rank == 0)
                fmt::print("{}\n", torchvision.line());
            }
            run_training(*o);
            return 0;
          }};
}

}  // namespace ddpx::cli
