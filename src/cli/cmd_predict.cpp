// `ddpx predict`: the seed's scaling table before renting the machines. Reads one-rank run reports (`ddpx train
// --ddp --report`, one per hook to price each hook's own work), a link model (a preset or a `ddpx allreduce --json`
// peak table), simulates the overlapped DDP step at N ranks for every hook and bucket cap (src/predict/), and
// prints steps/s, scaling efficiency, exposed communication and a verdict per row, plus the settings it
// recommends; --json writes the same for machines. All flag parsing is here; the model is in src/predict/.
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/arg_lists.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "io/output_file.hpp"
#include "io/same_file.hpp"
#include "model/model_registry.hpp"
#include "predict/link_sources.hpp"
#include "predict/prediction_output.hpp"
#include "predict/scaling_prediction.hpp"
#include "report/step_record.hpp"

namespace ddpx::cli {
namespace {

struct PredictFlags {
  std::vector<std::string> reports;
  std::string link;
  std::string network;
  int ranks_per_node = 0;  // 0: the link's own
  std::string ranks;       // "" = powers of two up to what the link supports
  std::string hooks = "allreduce,bf16,powersgd:1";
  std::string bucket_caps = "25,100,2000";
  double first_bucket_mb = 0;  // 0: the base report's
  std::string json_out;
};

// A report written before config.gradient_tensors existed: the tensors of ddpx's layout of its model (the layout
// is a pure function of the model spec, so it is the one the run used). Returns whether it filled them.
bool fill_gradient_tensors(RunReport& report) {
  if (!report.config.gradient_tensors.empty()) return false;
  const std::unique_ptr<Model> model = make_model(report.config.model);
  for (const TensorSlot& slot : model->layout().tensors())
    report.config.gradient_tensors.push_back({slot.name, slot.shape, static_cast<int64_t>(slot.offset),
                                              static_cast<int64_t>(slot.numel)});
  return true;
}

int run_predict(const PredictFlags& f) {
  using namespace ddpx::predict;
  if (!f.json_out.empty()) (void)check_output_path(f.json_out, "--json");
  std::vector<FileRole> inputs;
  for (const std::string& path : f.reports) inputs.push_back({"the report", path});
  if (std::filesystem::is_regular_file(f.link)) inputs.push_back({"--link", f.link});
  const std::vector<FileRole> outputs = {{"--json", f.json_out}};
  require_distinct_files(inputs, outputs);  // `predict R --json R` would replace the report it reads
  PredictionRequest request;
  std::vector<std::string> filled;
  for (const std::string& path : f.reports) {
    RunReport report = load_run_report(path);
    if (fill_gradient_tensors(report)) filled.push_back(path);
    request.reports.push_back(measure_step(report, path));
  }
  request.link = resolve_link(f.link);
  if (!f.network.empty()) {
    DDPX_REQUIRE(!request.link.network || f.link != "ib-ndr",
                 "--network {} with --link ib-ndr: the ib-ndr link already is a network (one rank per node)",
                 f.network);
    request.link.network = network_preset(f.network);
  }
  if (f.ranks_per_node > 0) request.link.ranks_per_node = f.ranks_per_node;
  request.ranks = f.ranks.empty() ? default_ranks(request.link) : parse_count_list(f.ranks, "--ranks");
  DDPX_REQUIRE(!request.ranks.empty(), "--link {}: it prices one node of {} rank(s), too few for an all-reduce; "
               "give --ranks-per-node N or --network ib-ndr", f.link, request.link.ranks_per_node);
  for (const std::string& hook : split_list(f.hooks, "--hooks"))
    request.hooks.push_back(predicted_hook(hook, "--hooks"));
  request.bucket_caps_mb = parse_number_list(f.bucket_caps, "--bucket-cap-mb");
  request.first_bucket_mb = f.first_bucket_mb > 0 ? f.first_bucket_mb : request.reports.front().first_bucket_mb;
  const Prediction prediction = predict_scaling(request);
  fmt::print("{}", format_prediction(request, prediction));
  for (const std::string& path : filled)
    fmt::print("# note: {} predates config.gradient_tensors; its tensors are ddpx's layout of model {}\n", path,
               request.reports.front().model);
  if (!f.json_out.empty()) {
    write_output_text(f.json_out, "--json", prediction_json(request, prediction).dump(1) + "\n");
    fmt::print("wrote {}\n", f.json_out);
  }
  return 0;
}

}  // namespace

Command add_predict_command(CLI::App* cmd) {
  const auto f = command_flags<PredictFlags>(cmd, HelpDefaults::per_flag);
  cmd->footer(
      "How it works: buckets (re-cut from the report's gradient tensors at each cap) become ready at the times the\n"
      "report measured during backward; each bucket's all-reduce calls (fp32, 2-byte casts, or PowerSGD's P and Q)\n"
      "run in order on one communication stream, priced as NCCL's own tuning model prices them (ring or tree, LL or\n"
      "Simple, the cheapest; latency per call included), plus the hook's own work measured at one rank. Step =\n"
      "the report's step without communication + the communication that runs past the end of backward.\n"
      "\n"
      "Record the inputs on one GPU (or one CPU rank), one report per hook you want priced exactly:\n"
      "  ddpx train --device cuda --model vit_l_32 --ddp --steps 60 --report allreduce.json\n"
      "  ddpx train --device cuda --model vit_l_32 --ddp --comm-hook bf16 --steps 60 --report bf16.json\n"
      "  ddpx predict allreduce.json bf16.json --link pcie-shm --ranks 2,4,8\n"
      "  ddpx predict allreduce.json --link nvlink4 --network ib-ndr --ranks 8,64,1024 --json prediction.json\n"
      "  ddpx allreduce --nproc-per-node 2 --json peak.json && ddpx predict allreduce.json --link peak.json\n"
      "\n"
      "Presets (figures and sources in docs/cli.md): pcie-shm (28 GB/s, NCCL through host memory), nvlink3\n"
      "(230 GB/s), nvlink4 (460 GB/s), 8 ranks per node; ib-ndr (45 GB/s per NIC, one rank per node).\n"
      "Columns: comm = the communication stream's busy time per step; exposed = the part not covered by backward;\n"
      "eff = predicted steps/s over the fastest report's measured steps/s (per-rank batch fixed).");
  cmd->add_option("reports", f->reports,
                  "one-rank run reports (ddpx train --report) of one model; the first is the base, others add "
                  "their hook's measured cost")
      ->required();
  cmd->add_option("--link", f->link, "a preset (pcie-shm, nvlink3, nvlink4, ib-ndr) or a `ddpx allreduce --json` "
                                     "file: the link between the ranks of one node")
      ->required();
  cmd->add_option("--network", f->network, "ib-ndr: nodes of --ranks-per-node ranks joined by InfiniBand NDR");
  cmd->add_option("--ranks-per-node", f->ranks_per_node,
                  "ranks sharing the --link on one node (default: 8 for the GPU presets, the measured world for a "
                  "file)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--ranks", f->ranks, "rank counts, e.g. 2,4,8 (default: powers of two up to what the link "
                                       "supports, 1024 with --network)");
  cmd->add_option("--hooks", f->hooks, "hooks to price: allreduce, fp16, bf16, powersgd:R")->capture_default_str();
  cmd->add_option("--bucket-cap-mb", f->bucket_caps, "bucket caps in MiB, as train's --bucket-mb")
      ->capture_default_str();
  cmd->add_option("--first-bucket-mb", f->first_bucket_mb, "first bucket's cap (default: the base report's)");
  cmd->add_option("--json", f->json_out, "also write the rows, recommendations and inputs as JSON here");
  return command_running(cmd, f, run_predict);
}

}  // namespace ddpx::cli
