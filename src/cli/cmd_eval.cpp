// `ddpx eval`: a saved model scored on any data source `train` reads, or the logits of a batch of .npy images.
// --data SOURCE (idx, folder, pack, wds) is opened through the data-source registry as train's --val is: the eval
// transform (resize + center crop, the training run's normalization, read from the weights' metadata and
// overridable by --augment/--mean/--std/--max-pixels), in order, sharded over --nproc-per-node ranks as --val is.
// --images X.npy [--labels Y.npy] is the .npy form (with labels: the registry's npy source). The model is the
// weights' own (their "ddpx.model" metadata) unless --model says otherwise. Prints loss, top-1, top-5 (when there
// are more than 5 classes), per-class accuracy and the confusion matrix; --json writes them as JSON, --out the
// logits.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/launch.hpp"
#include "core/error.hpp"
#include "data/data_sources.hpp"
#include "data/data_spec.hpp"
#include "data/eval_transform_metadata.hpp"
#include "data/npy_dataset.hpp"
#include "dist/backend_registry.hpp"
#include "io/npy.hpp"
#include "io/output_file.hpp"
#include "io/param_safetensors.hpp"
#include "io/same_file.hpp"
#include "model/model_registry.hpp"
#include "train/dataset_eval.hpp"
#include "train/dist_setup.hpp"
#include "train/numerics_guard.hpp"
#include "train/progress_line.hpp"
#include "train/run_modes.hpp"
#include "train/step_engine.hpp"

namespace ddpx::cli {
namespace {

struct EvalOptions {
  std::string model, weights, data, images, labels, out, json, device = "cpu", precision = "fp32";
  std::string augment, mean, std, backend = "auto";
  int64_t max_pixels = 0;    // 0: the weights' record (or the default)
  double crop_fraction = 0;  // 0: the weights' record (or the source's own)
  int64_t batch = 64;
  int nproc = 0;
  bool json_given = false;  // --json without a file: the JSON on stdout, the tables on stderr
};

// The model the weights were saved for: --model, else their "ddpx.model" (ddpx train --save), else "model" (every
// file ddpx writes). A PyTorch file records neither: --model is needed.
std::string model_of(const EvalOptions& e, const SafetensorsReader& reader) {
  if (!e.model.empty()) return e.model;
  for (const char* key : {"ddpx.model", "model"})
    if (const auto found = reader.metadata().find(key); found != reader.metadata().end()) return found->second;
  fail(
      "--weights {}: the file does not record its model (it was not saved by `ddpx train --save`); give --model "
      "(see `ddpx model --help`)",
      e.weights);
}

// The eval transform: the weights' record, each flag given overriding its part.
ImagePipelineSettings eval_transform(const EvalOptions& e, const RecordedEvalTransform& recorded) {
  ImagePipelineSettings settings = recorded.settings;
  if (!e.augment.empty()) settings.augmentation = parse_augmentation(e.augment);
  if (!e.mean.empty()) settings.normalization.mean = parse_float_list(e.mean, "--mean");
  if (!e.std.empty()) settings.normalization.std = parse_float_list(e.std, "--std");
  if (e.max_pixels != 0) settings.max_pixels = e.max_pixels;
  if (e.crop_fraction != 0) settings.center_crop_fraction = e.crop_fraction;
  DDPX_REQUIRE(settings.max_pixels > 0, "--max-pixels {}: must be positive", settings.max_pixels);
  DDPX_REQUIRE(settings.center_crop_fraction >= 0 && settings.center_crop_fraction <= 1,
               "--crop-fraction {}: give the part of the resized image the center crop keeps, in (0, 1] (0.875: "
               "Resize(256) + CenterCrop(224))",
               settings.center_crop_fraction);
  return settings;
}

// The data as --val would read it: sample k is the one-sample batch k of one rank (no shuffle), or, for images
// without labels, the .npy's k-th image.
struct EvalInput {
  std::unique_ptr<Dataset> dataset;  // --data, or --images with --labels
  std::vector<float> pixels;         // --images alone
  int64_t size = 0;
  std::string describe;
};

// `opened`: --data where it was opened already (to check the outputs against its files); opened here otherwise, so
// each process opens it once (Note [Data opened once], data/data_sources.cpp).
EvalInput open_input(const EvalOptions& e, std::optional<OpenedData> opened, const DataShape& shape,
                     const ImagePipelineSettings& transform) {
  EvalInput input;
  if (!e.labels.empty() || !e.data.empty()) {
    if (!opened) {
      DataSpec spec = e.data.empty() ? DataSpec(DataSource::npy) : parse_data_spec(e.data, DataOrigin::eval_data);
      spec.origin = DataOrigin::eval_data;
      if (spec.source == DataSource::npy) {
        DDPX_REQUIRE(!e.images.empty() && !e.labels.empty(),
                     "--data npy reads --images X.npy and --labels Y.npy: give both (or --images alone for logits)");
        spec.images = e.images;
        spec.labels = e.labels;
      }
      opened = open_data(spec);
    }
    DatasetContext context{.shape = shape, .seed = 0, .images = transform, .training = false};
    input.dataset = make_dataset(*opened, context);  // the registry's row, as train's --val
    input.size = input.dataset->batches_per_epoch(1, 1);
    input.describe = input.dataset->describe();
  } else {
    input.pixels = read_npy_images(e.images, shape);  // float32, finite: the policy train uses
    input.size = static_cast<int64_t>(input.pixels.size() / static_cast<size_t>(shape.image_numel()));
    input.describe = fmt::format("{} ({} images, no labels)", e.images, input.size);
  }
  return input;
}

std::unique_ptr<StepEngine> make_eval_engine(const Model& model, const EngineOptions& options,
                                             const DistJob& dist) {
  switch (options.device) {
    case Device::cpu:  // the node's cores shared by its ranks
      return make_cpu_engine(model, options, dist.local_world());
    case Device::cuda:
#ifdef DDPX_HAVE_CUDA
      return make_cuda_engine(model, options, dist.cuda_device(), dist.rank());
#else
      fail("--device cuda: this ddpx was built without CUDA; use --device cpu");
#endif
  }
  fail("--device: not a device");
}

int run_eval(const EvalOptions& e) {
  DDPX_REQUIRE(e.data.empty() || e.images.empty() || e.data == "npy",
               "--data {} and --images {}: give one (--data names a source, --images/--labels .npy files)", e.data,
               e.images);
  DDPX_REQUIRE(!e.data.empty() || !e.images.empty(),
               "give the data to evaluate: --data SOURCE (e.g. idx:/usr/share/datasets/fashion-mnist:test, "
               "folder:DIR, pack:FILE, wds:SHARDS) or --images X.npy [--labels Y.npy]");
  DDPX_REQUIRE(e.labels.empty() || !e.images.empty(), "--labels {} needs --images (the images they label)", e.labels);
  std::vector<FileRole> data_inputs;  // the data's files and folders: no output may be one of them or inside one
  std::optional<OpenedData> opened;  // --data, once opened: the ranks read the same value (open_input)
  if (!e.data.empty()) {  // checked before any rank starts or any file is read
    const DataSpec spec = parse_data_spec(e.data, DataOrigin::eval_data);
    DDPX_REQUIRE(spec.source == DataSource::npy || spec.is_image_source(),
                 "{}: eval needs data with labels: idx:, folder:, pack:, wds: or --images/--labels", spec.as_typed());
    if (spec.is_image_source() && (!e.out.empty() || !e.json.empty())) {  // only a file written needs them
      opened = open_data(spec);
      data_inputs = opened->inputs;
    }
  }
  DDPX_REQUIRE(e.batch >= 1, "--batch must be a positive number of images per forward pass, got {}", e.batch);
  const bool json_on_stdout = e.json_given && e.json.empty();
  // Outputs first: a bad --out or --json, or one that is an input, is refused before any work (and any rank).
  std::vector<FileRole> inputs = {{"--weights", e.weights}, {"--images", e.images}, {"--labels", e.labels}};
  inputs.insert(inputs.end(), data_inputs.begin(), data_inputs.end());
  const std::vector<FileRole> outputs = {{"--out", e.out}, {"--json", e.json}};
  if (!e.out.empty()) (void)check_output_path(e.out, "--out");
  if (!e.json.empty()) (void)check_output_path(e.json, "--json");
  require_distinct_files(inputs, outputs);
  DistOptions dist_settings;
  dist_settings.device = parse_device(e.device);
  dist_settings.backend = parse_backend(e.backend);
  if (start_workers_here(e.nproc))
    return launch_workers(e.nproc, LaunchTarget{.device = dist_settings.device, .backend = dist_settings.backend});

  const DistJob dist(dist_job_options(dist_settings));
  const bool lead = dist.lead();
  std::FILE* const tables = json_on_stdout ? stderr : stdout;  // --json alone: stdout is the JSON

  const auto eval_start = std::chrono::steady_clock::now();
  const auto elapsed_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - eval_start).count();
  };
  const SafetensorsReader reader(e.weights);
  const std::unique_ptr<Model> model =
      e.model.empty() ? make_model(model_of(e, reader)) : make_model_from_flag("--model", e.model);
  const FlatLayout& layout = model->layout();
  const int64_t classes = model->num_classes();
  const DataShape shape{model->input_shape().channels, model->input_shape().image_size, classes};
  // Progress on stderr (stdout stays the result): reading a large model or image file takes seconds.
  if (lead)
    fmt::print(stderr, "eval: reading --weights {} ({}{}, {} parameters)\n", e.weights, layout.spec(),
               e.model.empty() ? ", the model the file records" : "", layout.num_params());
  std::vector<float> params(layout.buffer_size(), 0.f);
  load_params_safetensors(e.weights, layout, params.data());
  if (const uint64_t bad = first_nonfinite(params); bad != ~0ull)
    fail(
        "--weights {}: the weights hold {} in {}; they come from a diverged run or a damaged file, and the logits "
        "would not be finite",
        e.weights, params[bad], tensor_at(layout, bad));
  // The training data's class names, where `ddpx train --save` recorded them (io/param_safetensors.hpp).
  std::vector<std::string> class_names = weights_class_names(reader);
  if (static_cast<int64_t>(class_names.size()) != classes) class_names.clear();  // not this head's: numbers only
  const RecordedEvalTransform recorded = read_eval_transform(reader.metadata(), e.weights);

  if (lead)
    fmt::print(stderr, "eval: reading {} {} ({} elapsed)\n", e.data.empty() ? "--images" : "--data",
               e.data.empty() ? e.images : e.data, short_duration(elapsed_s()));
  const EvalInput input = open_input(e, std::move(opened), shape, eval_transform(e, recorded));
  const int64_t n = input.size;
  const bool labelled = input.dataset != nullptr;
  if (labelled) {
    // Labels are class indices: data whose names differ from the ones the model learned would be scored wrongly.
    // Folders named 0..N-1 (a class per label index) name no classes.
    std::vector<std::string> data_names = input.dataset->class_names();
    bool indices_only = true;
    for (size_t k = 0; k < data_names.size(); ++k) indices_only = indices_only && data_names[k] == std::to_string(k);
    if (indices_only) data_names.clear();
    DDPX_REQUIRE(data_names.empty() || class_names.empty() || data_names == class_names,
                 "--data {}: its classes ({}) are not the ones --weights {} was trained on ({}); labels are class "
                 "indices, so evaluate data with the training data's classes",
                 e.data, fmt::format("{}", fmt::join(data_names, ", ")), e.weights,
                 fmt::format("{}", fmt::join(class_names, ", ")));
    if (class_names.empty()) class_names = data_names;
  }

  EngineOptions engine_options;
  engine_options.device = dist_settings.device;
  engine_options.precision = parse_precision(e.precision);
  engine_options.batch = std::min<int64_t>(e.batch, n);
  engine_options.validate();  // --device and --precision as train checks them (bf16 needs --device cuda)
  const std::unique_ptr<StepEngine> engine = make_eval_engine(*model, engine_options, dist);
  engine->upload_params(params.data());

  DatasetEvalJob job;
  job.total = n;
  job.image_numel = shape.image_numel();
  job.classes = classes;
  job.batch = engine_options.batch;
  job.labelled = labelled;
  job.keep_logits = !e.out.empty() || !labelled;
  job.comm = &dist.communicator();
  job.rank = dist.rank();
  job.world = dist.world();
  job.read = [&](int64_t first, int64_t count, float* images, int32_t* labels) {
    if (input.dataset) {
      for (int64_t i = 0; i < count; ++i)
        input.dataset->fill_batch(first + i, 0, 1, 1, images + i * job.image_numel, labels + i);
    } else {
      std::copy_n(input.pixels.data() + first * job.image_numel, count * job.image_numel, images);
    }
  };
  job.logits = [&](const float* images, int64_t count) { return engine->eval_logits(images, count); };
  // In about ten parts, each a progress line with elapsed time and ETA (rank 0's share when sharded).
  const double forward_start = elapsed_s();
  int64_t reported_tenths = 0;
  job.progress = [&](int64_t done, int64_t shard) {
    const int64_t tenths = done * 10 / shard;
    if (!lead || (tenths == reported_tenths && done < shard)) return;
    reported_tenths = tenths;
    const double spent = elapsed_s() - forward_start;
    fmt::print(stderr, "eval: {}/{} images{} ({:.0f}%), {} elapsed, ETA {}\n", done, shard,
               dist.world() > 1 ? fmt::format(" of rank 0's share (1 of {} ranks)", dist.world()) : "",
               100.0 * static_cast<double>(done) / static_cast<double>(shard), short_duration(elapsed_s()),
               short_duration(spent / static_cast<double>(done) * static_cast<double>(shard - done)));
  };
  const DatasetEvaluation evaluation = evaluate_dataset(job);
  if (!lead) return 0;

  if (!e.out.empty()) {
    const HostTensor tensor = HostTensor::from_values<float>({n, classes}, evaluation.logits);
    write_output_file(e.out, "--out", [&](OutputFile& file) { write_npy(file, tensor); });
    fmt::print(tables, "logits [{}, {}] written to {}\n", n, classes, e.out);
  } else if (!labelled) {
    for (int64_t i = 0; i < std::min<int64_t>(n, 8); ++i) {
      const float* row = evaluation.logits.data() + i * classes;
      const int64_t best = std::max_element(row, row + classes) - row;
      fmt::print(tables, "image {:>4}: class {:>4}{} (logit {:.4f})\n", i, best,
                 class_names.empty() ? "" : " " + class_names[static_cast<size_t>(best)], row[best]);
    }
    if (n > 8) fmt::print(tables, "... ({} images; --out FILE.npy writes all logits)\n", n);
  }
  if (!labelled) return 0;
  const EvalResult& result = evaluation.result;
  int64_t top1_count = 0;  // the matrix's diagonal (top-1's count, train/confusion_matrix.hpp)
  for (int64_t c = 0; c < classes; ++c) top1_count += evaluation.confusion.correct_of(c);
  fmt::print(tables, "eval of {} on {}{}\n", layout.spec(), input.describe,
             dist.world() > 1 ? fmt::format(", sharded over {} ranks", dist.world()) : "");
  fmt::print(tables, "loss (mean cross-entropy) {:.6f} | top-1 {:.2f}% ({} of {}){}\n", result.loss, result.top1,
             top1_count, n, classes > 5 ? fmt::format(" | top-5 {:.2f}%", result.top5) : "");
  fmt::print(tables, "{}{}", per_class_table(evaluation.confusion, class_names),
             confusion_table(evaluation.confusion, class_names));
  if (e.json_given) {
    nlohmann::json report = confusion_json(evaluation.confusion, class_names);
    report["model"] = layout.spec();
    report["weights"] = e.weights;
    report["data"] = e.data.empty() ? e.images : e.data;
    report["images"] = n;
    report["loss"] = result.loss;
    report["top1"] = result.top1;
    if (classes > 5) report["top5"] = result.top5;
    report["ranks"] = dist.world();
    if (json_on_stdout) {
      fmt::print("{}\n", report.dump(2));
    } else {
      write_output_text(e.json, "--json", report.dump(2) + "\n");
      fmt::print(tables, "--json: written to {}\n", e.json);
    }
  }
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App* cmd) {
  const auto e = command_flags<EvalOptions>(cmd, HelpDefaults::shown);
  cmd->add_option("--weights", e->weights,
                  ".safetensors with torchvision names (from `ddpx train --save`: its model, class names and eval "
                  "transform are used)")
      ->required();
  cmd->add_option("--model", e->model,
                  "model shape the weights belong to (default: the one the weights file records; see `ddpx model "
                  "--help`)");
  cmd->add_option("--data", e->data,
                  "labelled data to score, any image source train reads: idx:DIR[:train|test], folder:DIR, "
                  "pack:FILE, wds:SHARDS (read in order with the eval transform, as train's --val)");
  cmd->add_option("--images", e->images, ".npy images [N, C, H, W] float32 (instead of --data)");
  cmd->add_option("--labels", e->labels, ".npy labels [N] int64/int32 for --images: also score them");
  cmd->add_option("--augment", e->augment,
                  "the transform (default: the training run's, from the weights' metadata; else auto: resize + "
                  "center crop) | resize | crop-flip");
  cmd->add_option("--mean", e->mean, "per-channel Normalize mean (default: the training run's)");
  cmd->add_option("--std", e->std, "per-channel Normalize std (default: the training run's)");
  cmd->add_option("--max-pixels", e->max_pixels, "refuse larger images (default: the training run's)");
  cmd->add_option("--crop-fraction", e->crop_fraction,
                  "Resize(size / F) + CenterCrop(size), timm's crop_pct (default: the training data's, 1 for idx, "
                  "0.875 for photographs; else the data's own)");
  cmd->add_option("--out", e->out,
                  "write logits [N, classes] float32 to this .npy (written like train's outputs: atomically, a "
                  "symlink's target, /dev/null in place; never onto --weights, --images or --labels)");
  CLI::Option* json = cmd->add_option("--json", e->json,
                                      "write loss, top-1, top-5, per-class accuracy and the confusion matrix as JSON "
                                      "to this file; --json alone: on stdout (the tables go to stderr)")
                          ->expected(0, 1);
  cmd->add_option("--device", e->device, "cpu | cuda");
  cmd->add_option("--precision", e->precision, "fp32 | tf32 | bf16 (cuda)");
  cmd->add_option("--batch", e->batch, "images per forward pass");
  cmd->add_option("--nproc-per-node,--nproc_per_node", e->nproc,
                  "score the data on this many ranks, each its share, as train's --val (GPUs: one per GPU)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--backend", e->backend, "with --nproc-per-node: " + backend_help());
  return {cmd, [e, json] {
            e->json_given = json->count() > 0;
            return run_eval(*e);
          }};
}

}  // namespace ddpx::cli
