// `ddpx bench`: the seed's experiment in one command. Every row of the matrix model x precision x GPU count x
// hook x bucket size (x NCCL peer-to-peer on/off) is one `ddpx train` child (this executable) with its own
// workers, log and run report in --out; with PyTorch importable, the PyTorch anchor (bench/pt_vit_anchor.py)
// runs the same row for the ratio column. Writes bench.md, bench.csv, bench.json and bench.svg and prints the
// Markdown table.
// Rules: one-GPU rows train without DDP (one row per model and precision; hooks and buckets only matter with
// several ranks) unless the train flags after "--" contain --ddp; GPU counts above the visible GPUs are skipped
// with a note (the CPU runs any rank count under mpirun); P2P-off rows are added for multi-GPU rows on cuda only.
// Exit status 0 when every row that ran succeeded; 2 when any failed (the files are written anyway and name the
// failures and their logs).
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cli/arg_lists.hpp"
#include "cli/child_process.hpp"
#include "cli/commands.hpp"
#include "cli/cuda_devices.hpp"
#include "cli/launch.hpp"
#include "cli/output_dir.hpp"
#include "cli/train_trial.hpp"
#include "comm_plan/hook_catalogue.hpp"
#include "core/error.hpp"
#include "io/output_file.hpp"
#include "model/model_registry.hpp"
#include "analysis/bench_table.hpp"
#include "topology/gpu_peaks.hpp"
#include "analysis/svg_chart.hpp"
#include "train/run_modes.hpp"

namespace ddpx::cli {
namespace {

namespace fs = std::filesystem;

struct BenchFlags {
  std::string device = "cuda";
  std::string models = "vit_l_32";
  std::string precisions;  // "" = fp32,bf16 on cuda, fp32 on cpu
  std::string hooks = "allreduce";
  std::string bucket_mb = "25";
  std::string gpus;        // "" = 1 and every visible GPU (cuda), 1,2 (cpu)
  bool p2p_disabled = false;
  int steps = 60;
  int warmup = 10;
  int batch = 32;
  std::string out = "bench-out";
  std::string pytorch = "auto";
  std::string pytorch_script;
  bool dry_run = false;    // print the plan (rows, commands, run counts) and run nothing
  int ranks_per_gpu = 0;   // passed to every train run; 0: one rank per GPU
  std::vector<std::string> train_flags;
};

struct RowSpec {
  std::string model, precision, hook;
  double bucket_mb = 0;
  int world = 1;
  bool ddp = false;
  bool p2p_off = false;
  std::string config;  // the row's name everywhere
};

std::vector<RowSpec> plan_rows(const BenchFlags& f, const std::vector<int>& gpu_counts, bool ddp_on_one) {
  std::vector<RowSpec> rows;
  const std::vector<std::string> hooks = split_list(f.hooks, "--hooks");
  const std::vector<std::string> models = split_list(f.models, "--models");
  require_valid_hooks(hooks, "--hooks");
  require_valid_models(models, "--models");
  const std::vector<double> buckets = parse_number_list(f.bucket_mb, "--bucket-mb");
  for (const std::string& model : models)
    for (const std::string& precision : split_list(f.precisions, "--precisions"))
      for (int world : gpu_counts) {
        if (world == 1 && !ddp_on_one) {
          rows.push_back({model, precision, "", 0, 1, false, false, fmt::format("{} {}, no DDP", model, precision)});
          continue;
        }
        for (const std::string& hook : hooks)
          for (double bucket : buckets)
            for (bool p2p_off : {false, true}) {
              if (p2p_off && !(f.p2p_disabled && parse_device(f.device) == Device::cuda && world > 1)) continue;
              rows.push_back({model, precision, hook, bucket, world, true, p2p_off,
                              fmt::format("{} {}, hook {}, bucket {} MB{}", model, precision, hook, bucket,
                                          p2p_off ? ", P2P off" : "")});
            }
      }
  return rows;
}

std::vector<std::string> train_flags_for(const BenchFlags& f, const RowSpec& row) {
  std::vector<std::string> flags = {"--device", f.device, "--model", row.model, "--precision", row.precision,
                                    "--batch", std::to_string(f.batch), "--steps", std::to_string(f.steps),
                                    "--warmup", std::to_string(f.warmup)};
  if (row.world > 1) flags.insert(flags.end(), {"--nproc-per-node", std::to_string(row.world)});
  if (f.ranks_per_gpu > 0) flags.insert(flags.end(), {"--ranks-per-gpu", std::to_string(f.ranks_per_gpu)});
  if (row.ddp) flags.insert(flags.end(), {"--comm-hook", row.hook, "--bucket-mb", fmt::format("{}", row.bucket_mb)});
  flags.insert(flags.end(), f.train_flags.begin(), f.train_flags.end());
  return flags;
}

// steps/s from the anchor's JSON line ({"engine": "pytorch", ..., "steps_per_s": ...}); nullopt if absent.
std::optional<double> anchor_steps_per_s(const std::string& log_path) {
  std::ifstream in(log_path);
  std::optional<double> found;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.front() != '{') continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("steps_per_s") && j["steps_per_s"].is_number())
      found = j["steps_per_s"].get<double>();
  }
  return found;
}

std::vector<std::string> anchor_command(const BenchFlags& f, const RowSpec& row, const std::string& script) {
  std::vector<std::string> argv = {"python3"};
  if (row.ddp)  // DDP needs torchrun's environment, also on one GPU
    argv.insert(argv.end(), {"-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                             std::to_string(row.world)});
  argv.insert(argv.end(), {script, "--model", row.model, "--batch", std::to_string(f.batch), "--amp", row.precision,
                           "--steps", std::to_string(f.steps - f.warmup), "--warmup", std::to_string(f.warmup),
                           "--tag", row.config});
  if (row.ddp)
    argv.insert(argv.end(), {"--ddp", "--comm-hook", row.hook, "--bucket-mb", fmt::format("{}", row.bucket_mb)});
  // The same number of loader workers as ddpx's run, when the train flags set it.
  if (const auto workers = find_flag_value(f.train_flags, "--workers")) argv.insert(argv.end(), {"--workers", *workers});
  return argv;
}

std::string now_text() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char text[64] = {};
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

void write_text(const fs::path& path, const std::string& text) {
  write_output_text(path, "--out", text);
}

// --pytorch auto | off.
bool pytorch_anchor_on(const std::string& text) {
  if (text == "auto") return true;
  if (text == "off") return false;
  fail("--pytorch {}: expected auto or off", text);
}

int run_bench(BenchFlags f) {
  DDPX_REQUIRE(f.device == "cuda" || f.device == "cpu", "--device {}: expected cuda or cpu", f.device);
  // Read once: below, the device is a Device and the anchor a bool (f.device stays the child runs' flag text).
  const bool on_gpus = parse_device(f.device) == Device::cuda;
  const bool pytorch_auto = pytorch_anchor_on(f.pytorch);
  DDPX_REQUIRE(f.steps > f.warmup && f.warmup >= 0, "--steps {} must be larger than --warmup {} (both >= 0)", f.steps,
               f.warmup);
  DDPX_REQUIRE(f.batch >= 1, "--batch {}: must be at least 1", f.batch);
  DDPX_REQUIRE(f.ranks_per_gpu >= 0, "--ranks-per-gpu {}: must be 1 or more", f.ranks_per_gpu);
  DDPX_REQUIRE(f.ranks_per_gpu <= 1 || on_gpus, "--ranks-per-gpu {} applies to --device cuda",
               f.ranks_per_gpu);
  // Every row starts its own ranks: as one rank of a job, each rank would run the whole matrix.
  require_single_process("bench");
  reject_owned_flags(f.train_flags,
                     {"--device=--device", "--model=--models", "--precision=--precisions", "--comm-hook=--hooks",
                      "--bucket-mb=--bucket-mb", "--nproc-per-node=--gpus", "--steps=--steps", "--warmup=--warmup",
                      "--batch=--batch", "--report=--out", "--ranks-per-gpu=--ranks-per-gpu", "--config"},
                     "bench");
  if (f.precisions.empty()) f.precisions = on_gpus ? "fp32,bf16" : "fp32";
  for (const std::string& p : split_list(f.precisions, "--precisions"))
    DDPX_REQUIRE(on_gpus || p == "fp32", "--precisions {}: the CPU engine computes in fp32 only", p);
  const int visible = on_gpus ? visible_gpu_count() : 0;
  if (f.gpus.empty()) f.gpus = !on_gpus ? "1,2" : visible > 1 ? fmt::format("1,{}", visible) : "1";
  std::vector<std::string> notes;
  std::vector<int> gpu_counts;
  for (int count : parse_count_list(f.gpus, "--gpus")) {
    if (on_gpus && count > visible * std::max(1, f.ranks_per_gpu) && !f.dry_run)
      notes.push_back(fmt::format("skipped {} GPU(s): only {} visible on this machine{}", count, visible,
                                  f.ranks_per_gpu > 1 ? fmt::format(" ({} ranks each)", f.ranks_per_gpu) : ""));
    else
      gpu_counts.push_back(count);
  }
  if (f.p2p_disabled && !on_gpus) notes.push_back("--p2p-disabled ignored: it concerns NCCL on GPUs");
  const std::vector<RowSpec> plan = plan_rows(f, gpu_counts, has_flag(f.train_flags, "--ddp"));
  DDPX_REQUIRE(!plan.empty(), "nothing to run: {}", notes.empty() ? "the matrix is empty" : notes.front());
  const std::string rank_unit = on_gpus ? "GPU" : "rank";
  auto row_label = [&](size_t i, const RowSpec& spec) {
    return fmt::format("[{}/{}] {} ({} {}{})", i + 1, plan.size(), spec.config, spec.world, rank_unit,
                       spec.world == 1 ? "" : "s");
  };
  if (f.dry_run) {
    // The plan only: what a device call would run, to size it before spending GPU time.
    const bool anchor = pytorch_auto && on_gpus;
    int anchor_runs = 0;
    fmt::print("ddpx bench --dry-run: {} row(s), each its own `ddpx train` ({} steps, {} warm-up)\n", plan.size(),
               f.steps, f.warmup);
    for (size_t i = 0; i < plan.size(); ++i) {
      const RowSpec& spec = plan[i];
      const bool with_anchor = anchor && has_pytorch_anchor(spec.model);
      anchor_runs += with_anchor ? 1 : 0;
      std::string flags;
      for (const std::string& flag : train_flags_for(f, spec)) flags += " " + flag;
      fmt::print("{}{}\n      {}ddpx train{}\n", row_label(i, spec), with_anchor ? ", with the PyTorch anchor" : "",
                 spec.p2p_off ? "NCCL_P2P_DISABLE=1 " : "", flags);
    }
    fmt::print("total: {} ddpx run(s){}\n", plan.size(),
               anchor ? fmt::format(" and {} PyTorch run(s) when torch imports", anchor_runs) : "");
    for (const std::string& note : notes) fmt::print("note: {}\n", note);
    return 0;
  }

  create_output_dir(f.out, "--out");
  std::string script;
  bool with_pytorch = false;
  if (pytorch_auto && on_gpus) {
    script = find_helper_script(f.pytorch_script, "--pytorch-script", "bench/pt_vit_anchor.py");
    const bool torch_ok = !script.empty() && run_child_process({"python3", "-c", "import torch, torchvision"}, {},
                                                               (fs::path(f.out) / "pytorch-check.log").string()) == 0;
    with_pytorch = torch_ok;
    if (!torch_ok)
      notes.push_back(script.empty() ? "PyTorch column left empty: bench/pt_vit_anchor.py not found (--pytorch-script)"
                                     : "PyTorch column left empty: `python3 -c \"import torch, torchvision\"` failed");
  } else if (pytorch_auto) {
    notes.push_back("PyTorch column left empty: the anchor script measures GPUs only");
  }

  const std::string executable = this_executable();
  std::vector<BenchRow> rows;
  nlohmann::json runs = nlohmann::json::array();
  int failures = 0;
  // Written after every row too, so a bench stopped midway (a time limit) keeps every row it measured.
  const std::string setup = fmt::format("{} ({}), batch {} per rank, {} steps of which {} warm-up", f.device,
                                        on_gpus ? fmt::format("{} GPU(s) visible", visible) : "MPI ranks",
                                        f.batch, f.steps, f.warmup);
  auto write_results = [&](size_t rows_planned) {
    const std::string when = now_text();
    std::string extra;
    for (const std::string& flag : f.train_flags) extra += " " + flag;
    std::string markdown = fmt::format("# ddpx bench, {}\n\n{}{}\n\n", when, setup,
                                       extra.empty() ? "" : fmt::format("; train flags:{}", extra));
    if (!rows.empty()) markdown += bench_markdown(rows, rank_unit);
    std::vector<std::string> all_notes = notes;
    if (rows_planned > runs.size())
      all_notes.push_back(fmt::format("in progress: {} of {} rows run so far", runs.size(), rows_planned));
    // CPU ranks share one node's cores: efficiency over 100% compares thread counts, not scaling.
    for (size_t i = 0; i < rows.size() && !on_gpus; ++i)
      if (const std::optional<double> e = scaling_efficiency(rows, i); e && *e > 1.0) {
        all_notes.push_back(fmt::format(
            "scaling efficiency above 100% ({:.0f}% for {}): CPU ranks share this node's cores, and the 1-rank row's "
            "threads (--cpu-threads 0: all of them) differ from each rank's share at N ranks; it compares thread "
            "counts, not data-parallel scaling",
            100 * *e, rows[i].config));
        break;
      }
    if (!all_notes.empty()) {
      markdown += "\nNotes:\n";
      for (const std::string& note : all_notes) markdown += "- " + note + "\n";
    }
    const fs::path out(f.out);
    write_text(out / "bench.md", markdown);
    write_text(out / "bench.csv", rows.empty() ? std::string() : bench_csv(rows));
    nlohmann::json json = {{"date", when},       {"device", f.device}, {"batch", f.batch},
                           {"steps", f.steps},   {"warmup", f.warmup}, {"train_flags", f.train_flags},
                           {"rows", rows.empty() ? nlohmann::json::array() : bench_json(rows)},
                           {"runs", runs},       {"notes", all_notes}};
    write_text(out / "bench.json", json.dump(1) + "\n");
    if (!rows.empty())
      write_text(out / "bench.svg", render_svg(bench_chart(
                                        rows, fmt::format("ddpx bench: steps/s per configuration ({})", setup),
                                        rank_unit)));
    return markdown;
  };
  // Wall time of each run (start-up included), printed and kept: what sizes the next device call.
  using WallClock = std::chrono::steady_clock;
  auto seconds_since = [](WallClock::time_point t) {
    return std::chrono::duration<double>(WallClock::now() - t).count();
  };
  for (size_t i = 0; i < plan.size(); ++i) {
    const RowSpec& spec = plan[i];
    const std::string stem = fmt::format("row-{:02}", i + 1);
    TrainTrial trial;
    trial.flags = train_flags_for(f, spec);
    if (spec.p2p_off) trial.env = {"NCCL_P2P_DISABLE=1"};
    trial.log_path = (fs::path(f.out) / (stem + ".log")).string();
    trial.report_path = (fs::path(f.out) / (stem + ".json")).string();
    fmt::print("{} ... ", row_label(i, spec));
    std::fflush(stdout);
    const auto ddpx_start = WallClock::now();
    const TrainTrialResult result = run_train_trial(executable, trial);
    const double ddpx_seconds = seconds_since(ddpx_start);
    nlohmann::json run = {{"config", spec.config}, {"gpus", spec.world}, {"train_flags", trial.flags},
                          {"env", trial.env}, {"log", trial.log_path}, {"report", trial.report_path},
                          {"status", result.status}, {"ddpx_wall_s", ddpx_seconds}};
    if (!result.steps_per_s) {
      ++failures;
      fmt::print("failed\n{}", result.failure());
      notes.push_back(fmt::format("{} (world {}) failed: exit status {}, see {}", spec.config, spec.world,
                                  result.status, trial.log_path));
      runs.push_back(run);
      write_results(plan.size());
      continue;
    }
    BenchRow row{spec.config, spec.precision, spec.world, *result.steps_per_s, std::nullopt, spec.model};
    row.images_per_s = result.images_per_s;
    if (spec.ddp) row.hook = spec.hook, row.bucket_mb = spec.bucket_mb;
    row.p2p_off = spec.p2p_off;
    // MFU per GPU: the model's training FLOPs (3 x forward) per image against the GPU's dense bf16 peak.
    if (const std::optional<double> peak = on_gpus ? dense_bf16_peak_flops(result.device_name) : std::nullopt;
        peak && row.images_per_s)
      row.mfu = *row.images_per_s * 3 * make_model(spec.model)->forward_flops_per_image() / spec.world / *peak;
    fmt::print("{:.2f} steps/s ({:.0f} s)", row.ddpx_steps_per_s, ddpx_seconds);
    if (with_pytorch && has_pytorch_anchor(spec.model)) {
      const std::string anchor_log = (fs::path(f.out) / (stem + ".pytorch.log")).string();
      const std::vector<std::string> argv = anchor_command(f, spec, script);
      const auto anchor_start = WallClock::now();
      const int status = run_child_process(argv, trial.env, anchor_log);
      run["pytorch_wall_s"] = seconds_since(anchor_start);
      row.pytorch_steps_per_s = status == 0 ? anchor_steps_per_s(anchor_log) : std::nullopt;
      run["pytorch_command"] = argv;
      run["pytorch_log"] = anchor_log;
      if (row.pytorch_steps_per_s) {
        fmt::print(", PyTorch {:.2f} steps/s ({:.0f} s)", *row.pytorch_steps_per_s, run["pytorch_wall_s"].get<double>());
      } else {
        fmt::print(", PyTorch failed");
        notes.push_back(fmt::format("{}: the PyTorch anchor failed (exit status {}), see {}", spec.config, status,
                                    anchor_log));
      }
    }
    fmt::print("\n");
    std::fflush(stdout);
    run["ddpx_steps_per_s"] = row.ddpx_steps_per_s;
    run["pytorch_steps_per_s"] = row.pytorch_steps_per_s ? nlohmann::json(*row.pytorch_steps_per_s) : nullptr;
    runs.push_back(run);
    rows.push_back(row);
    write_results(plan.size());
  }
  const std::string markdown = write_results(plan.size());

  fmt::print("\n{}\nwrote {}/bench.md, bench.csv, bench.json{}\n", markdown, f.out, rows.empty() ? "" : ", bench.svg");
  DDPX_REQUIRE(failures == 0, "{} of {} bench run(s) failed; their logs are named in {}/bench.md", failures,
               plan.size(), f.out);
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App* cmd) {
  const auto f = command_flags<BenchFlags>(cmd, HelpDefaults::shown);
  cmd->add_option("--device", f->device, "cuda | cpu (then ranks run under mpirun, fp32 only)");
  cmd->add_option("--models", f->models, "comma list of --model values: " + model_names_help());
  cmd->add_option("--precisions", f->precisions, "comma list of fp32, tf32, bf16 (default fp32,bf16; cpu: fp32)");
  cmd->add_option("--hooks", f->hooks, "comma list of --comm-hook values: " + comm_hook_syntaxes(", "));
  cmd->add_option("--bucket-mb", f->bucket_mb, "comma list of bucket caps in MB (2000: one bucket, the seed's)");
  cmd->add_option("--gpus", f->gpus, "comma list of GPU counts (default 1 and all visible GPUs; cpu: 1,2 ranks)");
  cmd->add_flag("--p2p-disabled", f->p2p_disabled, "also run every multi-GPU row with NCCL_P2P_DISABLE=1 (PCIe-like)");
  cmd->add_option("--steps", f->steps, "training steps per row, warm-up included");
  cmd->add_option("--warmup", f->warmup, "steps excluded from steps/s");
  cmd->add_option("--batch", f->batch, "images per rank per step (the seed's 32)");
  cmd->add_option("--out", f->out, "folder for the tables, the chart, every run's log and report");
  cmd->add_option("--pytorch", f->pytorch, "auto (run the PyTorch anchor when torch imports) | off");
  cmd->add_option("--pytorch-script", f->pytorch_script, "the anchor (default: bench/pt_vit_anchor.py of the repo)");
  cmd->add_flag("--dry-run", f->dry_run,
                "print the rows and their `ddpx train` commands, run nothing (GPU counts are taken as given)");
  cmd->add_option("--ranks-per-gpu", f->ranks_per_gpu,
                  "K ranks share each GPU in every row (--gpus counts ranks then; NCCL 2.30+)");
  cmd->add_option("train_flags", f->train_flags, "flags for every `ddpx train` run, after '--'");
  return command_running(cmd, f, run_bench);
}

}  // namespace ddpx::cli
