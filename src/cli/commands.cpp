// The subcommands of ddpx, one row each: the name, the description (the line `ddpx --help` lists, and the top
// of `ddpx NAME --help`), and the function of cmd_*.cpp that adds the flags. Adding a subcommand is one row here.
#include "cli/commands.hpp"

namespace ddpx::cli {
namespace {

struct CommandRow {
  const char* name;
  const char* description;
  Command (*add)(CLI::App* cmd);
};

constexpr CommandRow kCommands[] = {
    {"model",
     "Print a model's tensors (reference names and shapes) and its size",
     add_model_command},
    {"eval",
     "Score saved weights on any data train reads (loss, top-1/top-5, per class), or logits of .npy images",
     add_eval_command},
    {"train",
     "Train a ViT, data-parallel when started on several ranks.\n"
     "Prints a progress line every --log-every steps and, at the end, a summary and the step breakdown\n"
     "(data wait, forward, backward, exposed communication, optimizer) with a verdict on what bounds the step.",
     add_train_command},
    {"report",
     "Analyse a saved run report (ddpx train --report FILE): breakdown, bandwidth, verdict, trace; or check a trace "
     "file (--check-trace)",
     add_report_command},
    {"topo",
     "Print the GPU and NIC link matrix (X, NV#, PIX, PXB, PHB, NODE, SYS, as `nvidia-smi topo -m`; NICs from\n"
     "sysfs), CPU affinity, NUMA affinity, GPU NUMA ID, peer access, and the transport NCCL will use between\n"
     "each pair of GPUs.\n"
     "NVML is loaded at run time; without a driver or GPUs it says so and exits 0.",
     add_topo_command},
    {"allreduce",
     "Measure all-reduce like nccl-tests' all_reduce_perf, in its output format (out-of-place and in-place time,\n"
     "algbw, busbw, #wrong per size; NCCL on GPUs, MPI on CPUs), and write the peak table that run reports\n"
     "compare their buckets with.",
     add_allreduce_command},
    {"bench",
     "Run the seed's experiment: precision x hook x bucket size x GPU count, each row its own `ddpx train` with\n"
     "its own workers (plus the PyTorch anchor when torch is importable); write bench.md, bench.csv,\n"
     "bench.json and bench.svg into --out. Flags after '--' go to every `ddpx train` run.",
     add_bench_command},
    {"tune",
     "Try bucket sizes, first-bucket sizes and hooks in short `ddpx train` trials, keep the fastest and write it\n"
     "as a config file for `ddpx train --config FILE`. Flags after '--' go to every trial (they must start\n"
     "several ranks, e.g. --nproc-per-node 2, or use --ddp).",
     add_tune_command},
    {"predict",
     "Predict data-parallel scaling before renting the machines: from one-rank run reports and a link model,\n"
     "simulate the overlapped DDP step at N ranks for each hook and bucket cap, and print steps/s, scaling\n"
     "efficiency, exposed communication and a verdict per row, plus the bucket cap and hook to use.",
     add_predict_command},
    {"pack",
     "Write an image source as one packed file for --data pack:OUT: images decoded once, the longer side cut to "
     "--max-side (FFCV's idea), stored raw (fastest to read) or re-encoded as JPEG, with an index and a CRC-32 "
     "per record, read with pread. Layout: docs/pack-format.md. OUT may not be any of SOURCE's files, nor lie "
     "inside a folder: source",
     add_pack_command},
    {"data-bench",
     "Measure the input side: images/s of the folder's JPEGs, a JPEG pack and a raw pack of them, with the train "
     "(RandomResizedCrop + flip) and eval (resize + center crop) transforms, per core and on --threads, beside "
     "torchvision's ImageFolder + DataLoader on the same files and the decode-only limit",
     add_data_bench_command},
    {"data-preview",
     "Draw one batch of an image source as the model gets it (after the train transform, or the eval one with "
     "--eval) into a PNG grid with each tile's class index, list the tiles in OUT.json, and optionally dump the "
     "batch as .npy to compare with another pipeline",
     add_data_preview_command},
};

}  // namespace

CommandSet register_commands(CLI::App& app) {
  CommandSet set;
  for (const CommandRow& row : kCommands)
    set.commands.push_back(row.add(app.add_subcommand(row.name, row.description)));
  // `train --config FILE` (CLI11 2.1 ignores subcommand configs); torchvision's keys were translated before.
  read_config_for(*app.get_subcommand("train"), translated_config_key);
  read_integers_in_decimal(app);  // after every command's own checks: "010" is 10, never octal
  return set;
}

}  // namespace ddpx::cli
