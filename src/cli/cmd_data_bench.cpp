// `ddpx data-bench folder:DIR`: the input side's images/s for each path (the folder's JPEGs, a JPEG pack and a raw
// pack of the same files, --max-side 256), with the train and the eval transform, on one thread (per core) and on
// --threads; torchvision's ImageFolder + DataLoader (PIL, the same transforms: bench/torchvision_loader_bench.py)
// on the same files in the same call, with one worker and with --threads workers; and the decode-only limit
// (libjpeg-turbo full-size decodes of the same files, file reads included, one thread). Ratios are per core
// against torchvision's one-worker figure of the same transform. With --randaugment N,M (or --trivial-augment, or
// --auto-augment-policy P) a third transform, train + that augmentation (data/auto_augment.hpp; torchvision's
// RandAugment, TrivialAugmentWide or AutoAugment on the PIL image after the flip, as its reference recipe), and what
// it adds per image in core-microseconds on each path, against the train transform.
// Each figure also states the CPU time it took per image (core-us/img); with --rounds R the one-thread figures are
// the best of R measurements (the ddpx ones back to back, torchvision's interleaved with its other figures).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "cli/child_process.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "data/data_sources.hpp"
#include "data/loader_throughput.hpp"
#include "data/pack_writer.hpp"
#include "data/auto_augment.hpp"

namespace ddpx::cli {
namespace {

namespace fs = std::filesystem;

struct BenchFlags {
  std::string source, pack_dir, python, script, randaugment, auto_augment_policy;
  bool trivial_augment = false;
  int size = 224, threads = 0, max_side = 256, rounds = 1;
  int64_t images = 512;
  bool no_torchvision = false;
};

// torchvision's images/s for one transform and worker count; nullopt (and a note) when it could not run.
struct AnchorRate {
  double per_second = 0, core_us_per_image = 0;  // wall-clock images/s; CPU time of its processes per image
};

// transform: "train", "eval", "train+aug" (train with the automatic augmentation) or "augment-only" (the
// augmentation alone, in the script's process: workers is then ignored).
std::optional<AnchorRate> torchvision_rate(const BenchFlags& f, const std::string& dir, const std::string& transform,
                                       int workers, const std::string& log, std::vector<std::string>& notes) {
  std::vector<std::string> args = {f.python, f.script, dir, "--size", std::to_string(f.size), "--workers",
                                   std::to_string(workers), "--images", std::to_string(f.images), "--transform",
                                   transform == "train+aug" ? "train" : transform};
  if (transform == "train+aug" || transform == "augment-only") {
    if (!f.randaugment.empty()) args.insert(args.end(), {"--randaugment", f.randaugment});
    if (f.trivial_augment) args.push_back("--trivial-augment");
    if (!f.auto_augment_policy.empty()) args.insert(args.end(), {"--auto-augment-policy", f.auto_augment_policy});
  }
  const int status = run_child_process(args, {}, log);
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.front() != '{') continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("images_per_s"))
      return AnchorRate{j["images_per_s"].get<double>(),
                        j.contains("cpu_seconds") && j.value("images", 0) > 0
                            ? j["cpu_seconds"].get<double>() * 1e6 / j["images"].get<double>()
                            : 0.0};
  }
  notes.push_back(fmt::format("torchvision ({} transform, {} workers) did not run (exit {}): {}", transform, workers,
                              status, file_tail(log, 3)));
  return std::nullopt;
}

}  // namespace

Command add_data_bench_command(CLI::App* cmd) {
  const auto f = command_flags<BenchFlags>(cmd, HelpDefaults::per_flag);
  cmd->add_option("SOURCE", f->source, "folder:DIR of JPEGs (bench/make_jpeg_folder.py makes one from photographs)")
      ->required();
  cmd->add_option("--size", f->size, "output side of the transforms")->capture_default_str();
  cmd->add_option("--images", f->images, "images per measurement")->capture_default_str();
  cmd->add_option("--threads", f->threads, "threads (and torchvision workers) for the total (0: hardware threads)");
  cmd->add_option("--max-side", f->max_side, "the packs' --max-side")->capture_default_str();
  cmd->add_option("--pack-dir", f->pack_dir, "where the packs are written (default: a temporary folder, removed)");
  cmd->add_option("--python", f->python, "the Python with torch and torchvision (default /usr/bin/python3, else python3)");
  cmd->add_option("--torchvision-script", f->script, "default: bench/torchvision_loader_bench.py of the repo");
  cmd->add_flag("--no-torchvision", f->no_torchvision, "skip the torchvision anchor");
  cmd->add_option("--rounds", f->rounds,
                  "measure each one-thread (and one-worker torchvision) figure this many times, interleaved with the "
                  "others, and keep the best of each (a loaded machine only slows a figure down)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  cmd->add_option("--randaugment", f->randaugment,
                  "N,M: also measure the train transform + RandAugment(N, M) (ddpx train's --randaugment; "
                  "torchvision's RandAugment in its transform) and print what it costs per image");
  cmd->add_flag("--trivial-augment", f->trivial_augment,
                "the same with TrivialAugmentWide (ddpx train's --trivial-augment)");
  cmd->add_option("--auto-augment-policy", f->auto_augment_policy,
                  "imagenet | cifar10 | svhn: the same with AutoAugment (ddpx train's --auto-augment-policy)");
  return {cmd, [f] {
            const DataSpec spec = parse_data_spec(f->source, DataOrigin::bench_source);
            DDPX_REQUIRE(spec.source == DataSource::folder, "{}: data-bench measures a folder:DIR of JPEGs",
                         spec.as_typed());
            std::optional<AutoAugmentSpec> augment;
            const AutoAugmentSpec chosen =
                choose_auto_augment(f->randaugment, f->trivial_augment, f->auto_augment_policy);
            if (chosen.enabled()) augment = chosen;
            std::vector<std::string> transforms = {"train", "eval"};
            if (augment) transforms.push_back("train+aug");
            const int threads = f->threads > 0 ? f->threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
            if (f->python.empty()) f->python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
            const bool temporary = f->pack_dir.empty();
            const fs::path pack_dir = temporary ? fs::temp_directory_path() / fmt::format("ddpx-data-bench-{}", ::getpid())
                                                : fs::path(f->pack_dir);
            fs::create_directories(pack_dir);
            std::vector<std::string> notes;
            // Each source once (Note [Data opened once]): the folder here, each pack when written; every figure's
            // dataset wraps the opened source.
            const OpenedData folder_data = open_data(spec);
            const SampleSource* const folder = folder_data.samples.get();
            fmt::print("ddpx data-bench: {} | {} images per figure, output {}x{}, {} thread{} for the total\n",
                       folder->describe(), f->images, f->size, f->size, threads, threads == 1 ? "" : "s");
            PackOptions jpeg;
            jpeg.max_side = f->max_side;
            jpeg.threads = threads;
            PackOptions raw = jpeg;
            raw.storage = PackStorage::raw;
            const std::string jpeg_pack = (pack_dir / "jpeg.pack").string(), raw_pack = (pack_dir / "raw.pack").string();
            write_pack(*folder, jpeg_pack, jpeg);
            write_pack(*folder, raw_pack, raw);
            const OpenedData jpeg_data = open_data(parse_data_spec("pack:" + jpeg_pack, DataOrigin::bench_source));
            const OpenedData raw_data = open_data(parse_data_spec("pack:" + raw_pack, DataOrigin::bench_source));
            const Throughput decode = measure_full_decodes(*folder, f->images);

            std::optional<AnchorRate> tv[3][2];  // [train/eval/train+aug][1 worker / threads workers]
            std::optional<AnchorRate> tv_alone;  // torchvision's augmentation alone, in process
            if (!f->no_torchvision) {
              f->script =
                  find_helper_script(f->script, "--torchvision-script", "bench/torchvision_loader_bench.py");
              if (f->script.empty()) {
                notes.push_back("torchvision column empty: bench/torchvision_loader_bench.py not found");
              } else {
                for (int round = 0; round < f->rounds; ++round)
                  for (size_t t = 0; t < transforms.size(); ++t)
                    for (int w = 0; w < 2; ++w) {
                      if (w == 1 && round > 0) continue;  // the --threads figure once
                      const std::optional<AnchorRate> rate =
                          torchvision_rate(*f, spec.location, transforms[t], w == 0 ? 1 : threads,
                                           (pack_dir / fmt::format("torchvision-{}-{}.log", t, w)).string(), notes);
                      if (!rate) continue;
                      AnchorRate& best = tv[t][w] ? *tv[t][w] : tv[t][w].emplace(*rate);
                      best.per_second = std::max(best.per_second, rate->per_second);
                      best.core_us_per_image = std::min(best.core_us_per_image, rate->core_us_per_image);
                    }
                for (int round = 0; augment && round < f->rounds; ++round)
                  if (const std::optional<AnchorRate> rate = torchvision_rate(
                          *f, spec.location, "augment-only", 0, (pack_dir / "torchvision-aug.log").string(), notes)) {
                    AnchorRate& best = tv_alone ? *tv_alone : tv_alone.emplace(*rate);
                    best.per_second = std::max(best.per_second, rate->per_second);
                    best.core_us_per_image = std::min(best.core_us_per_image, rate->core_us_per_image);
                  }
              }
            }
            fmt::print("{:<14} {:<8} {:>14} {:>14} {:>16} {:>16} {:>12}\n", "path", "xform", "1 thread img/s",
                       fmt::format("{} thr img/s", threads), "x torchvision/core", "x decode-only", "core-us/img");
            const auto row = [&](const char* name, const std::string& transform, const Throughput& one, double all,
                                 std::optional<AnchorRate> anchor) {
              fmt::print("{:<14} {:<8} {:>14.1f} {:>14.1f} {:>16} {:>16.2f} {:>12.0f}\n", name, transform,
                         one.per_second(), all, anchor ? fmt::format("{:.2f}", one.per_second() / anchor->per_second) : "-",
                         one.per_second() / decode.per_second(), one.core_us_per_image());
            };
            std::vector<Throughput> train_one;  // per path, the train transform's one-thread measurement
            std::vector<std::string> costs;
            for (size_t t = 0; t < transforms.size(); ++t) {
              DatasetContext context;
              context.shape = DataShape{3, f->size, std::max<int64_t>(folder->num_classes(), 1)};
              context.images.augmentation = t == 1 ? Augmentation::resize : Augmentation::crop_flip;
              if (transforms[t] == "train+aug") context.images.auto_augment = *augment;
              size_t path = 0;
              for (const auto& [name, opened] : std::vector<std::pair<const char*, const OpenedData*>>{
                       {"folder JPEG", &folder_data}, {"pack JPEG", &jpeg_data}, {"pack raw", &raw_data}}) {
                const std::unique_ptr<Dataset> dataset = make_dataset(*opened, context);
                Throughput one = measure_batches(*dataset, 1, 32, f->images);
                for (int round = 1; round < f->rounds; ++round) {  // best of --rounds: the fastest, the least CPU
                  const Throughput again = measure_batches(*dataset, 1, 32, f->images);
                  one.seconds = std::min(one.seconds, again.seconds);
                  one.cpu_seconds = std::min(one.cpu_seconds, again.cpu_seconds);
                }
                const double all = measure_batches(*dataset, threads, 32, f->images).per_second();
                row(name, transforms[t], one, all, tv[t][0]);
                if (t == 0) train_one.push_back(one);
                if (transforms[t] == "train+aug") {
                  const Throughput& before = train_one[path];
                  costs.push_back(fmt::format("{:<12} {:>6.0f} core-us per image ({:.0f} -> {:.0f} core-us, x{:.2f} "
                                              "the work per image)",
                                              name, one.core_us_per_image() - before.core_us_per_image(),
                                              before.core_us_per_image(), one.core_us_per_image(),
                                              one.core_us_per_image() / before.core_us_per_image()));
                }
                ++path;
              }
              if (tv[t][0])
                fmt::print("{:<14} {:<8} {:>14.1f} {:>14} {:>16} {:>16.2f} {:>12.0f}\n", "torchvision", transforms[t],
                           tv[t][0]->per_second, tv[t][1] ? fmt::format("{:.1f}", tv[t][1]->per_second) : "-", "1.00",
                           tv[t][0]->per_second / decode.per_second(), tv[t][0]->core_us_per_image);
              if (transforms[t] == "train+aug" && tv[0][0] && tv[t][0])
                costs.push_back(fmt::format("{:<12} {:>6.0f} core-us per image ({:.0f} -> {:.0f} core-us, x{:.2f} "
                                            "the work per image; its main process and one worker)",
                                            "torchvision", tv[t][0]->core_us_per_image - tv[0][0]->core_us_per_image,
                                            tv[0][0]->core_us_per_image, tv[t][0]->core_us_per_image,
                                            tv[t][0]->core_us_per_image / tv[0][0]->core_us_per_image));
            }
            fmt::print("{:<14} {:<8} {:>14.1f} {:>14} {:>16} {:>16} {:>12.0f}\n", "decode-only", "full",
                       decode.per_second(), "-", "-", "1.00", decode.core_us_per_image());
            if (augment) {
              fmt::print("{} adds (CPU time of the one-thread figures, which load inflates less than images/s):\n",
                         augment->describe());
              for (const std::string& cost : costs) fmt::print("  {}\n", cost);
              // Alone: on the train transform's outputs of the raw pack's first 32 images, best of --rounds.
              DatasetContext context;
              context.shape = DataShape{3, f->size, std::max<int64_t>(folder->num_classes(), 1)};
              context.images.augmentation = Augmentation::crop_flip;
              const std::unique_ptr<Dataset> dataset = make_dataset(raw_data, context);
              std::vector<uint8_t> pixels(static_cast<size_t>(32 * dataset->shape().image_numel()));
              std::vector<int32_t> labels(32);
              dataset->fill_pixels(0, 0, 1, 32, pixels.data(), labels.data());
              Throughput alone = measure_auto_augment(*augment, pixels.data(), 32, f->size, 3, f->images * 4);
              for (int round = 1; round < f->rounds; ++round) {
                const Throughput again = measure_auto_augment(*augment, pixels.data(), 32, f->size, 3, f->images * 4);
                alone.seconds = std::min(alone.seconds, again.seconds);
                alone.cpu_seconds = std::min(alone.cpu_seconds, again.cpu_seconds);
              }
              fmt::print("  alone, one thread, {}x{} images: ddpx {:.0f} core-us per image ({:.0f} images/s)", f->size,
                         f->size, alone.core_us_per_image(), alone.per_second());
              if (tv_alone)
                fmt::print("; torchvision (PIL) {:.0f} core-us ({:.0f} images/s): ddpx x{:.2f} faster per core",
                           tv_alone->core_us_per_image, tv_alone->per_second,
                           tv_alone->core_us_per_image / alone.core_us_per_image());
              fmt::print("\n");
            }
            for (const std::string& note : notes) fmt::print("note: {}\n", note);
            if (temporary) fs::remove_all(pack_dir);
            return 0;
          }};
}

}  // namespace ddpx::cli
