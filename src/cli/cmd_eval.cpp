// `ddpx eval`: logits of a batch of images for given weights, and the mean cross-entropy when labels are given.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "data/npy_dataset.hpp"
#include "io/npy.hpp"
#include "io/output_file.hpp"
#include "io/param_safetensors.hpp"
#include "io/same_file.hpp"
#include "train/numerics_guard.hpp"
#include "model/cross_entropy.hpp"
#include "model/model_registry.hpp"
#include "train/evaluation.hpp"
#include "train/progress_line.hpp"
#include "train/run_modes.hpp"
#include "train/step_engine.hpp"

namespace ddpx::cli {
namespace {

struct EvalOptions {
  std::string model = "vit_tiny_test", weights, images, labels, out, device = "cpu", precision = "fp32";
  int64_t batch = 64;
};

int run_eval(const EvalOptions& e) {
  const std::unique_ptr<Model> model = make_model(e.model);
  const FlatLayout& layout = model->layout();
  const int64_t classes = model->num_classes();
  const DataShape shape{model->input_shape().channels, model->input_shape().image_size, classes};
  // Outputs first: a bad --out, or one that is an input, is refused before any work.
  const std::vector<FileRole> inputs = {{"--weights", e.weights}, {"--images", e.images}, {"--labels", e.labels}};
  const std::vector<FileRole> outputs = {{"--out", e.out}};
  if (!e.out.empty()) (void)check_output_path(e.out, "--out");
  require_distinct_files(inputs, outputs);
  // Progress on stderr (stdout stays the result): reading a large model or image file takes seconds.
  const auto eval_start = std::chrono::steady_clock::now();
  const auto elapsed_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - eval_start).count();
  };
  fmt::print(stderr, "eval: reading --weights {} ({} parameters)\n", e.weights, layout.num_params());
  std::vector<float> params(layout.buffer_size(), 0.f);
  load_params_safetensors(e.weights, layout, params.data());
  // The training data's class names, where `ddpx train --save` recorded them (io/param_safetensors.hpp).
  std::vector<std::string> class_names = weights_class_names(SafetensorsReader(e.weights));
  if (static_cast<int64_t>(class_names.size()) != classes) class_names.clear();  // not this head's: numbers only
  if (const uint64_t bad = first_nonfinite(params); bad != ~0ull)
    fail("--weights {}: the weights hold {} in {}; they come from a diverged run or a damaged file, and the logits "
         "would not be finite", e.weights, params[bad], tensor_at(layout, bad));
  fmt::print(stderr, "eval: reading --images {} ({} elapsed)\n", e.images, short_duration(elapsed_s()));
  std::vector<float> pixels = read_npy_images(e.images, shape);  // float32, finite: the policy train uses
  const int64_t n = static_cast<int64_t>(pixels.size() / static_cast<size_t>(shape.image_numel()));
  // Labels are checked (count, range, dtype) before anything runs or is written: a bad label file must not leave
  // --out behind.
  const std::vector<int32_t> labels = e.labels.empty() ? std::vector<int32_t>{} : read_npy_labels(e.labels, n, shape);
  DDPX_REQUIRE(e.batch >= 1, "--batch must be a positive number of images per forward pass, got {}", e.batch);

  EngineOptions engine_options;
  engine_options.device = parse_device(e.device);
  engine_options.precision = parse_precision(e.precision);
  engine_options.batch = std::min<int64_t>(e.batch, n);
  engine_options.validate();  // --device and --precision as train checks them (bf16 needs --device cuda)
  std::unique_ptr<StepEngine> engine;
  switch (engine_options.device) {
    case Device::cpu:
      engine = make_cpu_engine(*model, engine_options);
      break;
    case Device::cuda:
#ifdef DDPX_HAVE_CUDA
      engine = make_cuda_engine(*model, engine_options, 0);
#else
      fail("--device cuda: this ddpx was built without CUDA; use --device cpu");
#endif
      break;
  }
  engine->upload_params(params.data());
  // In about ten parts, each a progress line with elapsed time and ETA (one part when it fits one batch).
  // Parts are whole batches, so every image sees the batching it would in one call.
  const int64_t tenth = (n + 9) / 10;
  const int64_t part = (tenth + engine_options.batch - 1) / engine_options.batch * engine_options.batch;
  std::vector<float> logits;
  logits.reserve(static_cast<size_t>(n * classes));
  const auto forward_start = elapsed_s();
  for (int64_t first = 0; first < n; first += part) {
    const int64_t count = std::min(part, n - first);
    const std::vector<float> chunk =
        engine->eval_logits(pixels.data() + first * shape.image_numel(), count);
    logits.insert(logits.end(), chunk.begin(), chunk.end());
    const double spent = elapsed_s() - forward_start;
    const int64_t done = first + count;
    fmt::print(stderr, "eval: {}/{} images ({:.0f}%), {} elapsed, ETA {}\n", done, n, 100.0 * done / n,
               short_duration(elapsed_s()), short_duration(spent / done * (n - done)));
  }

  if (!e.out.empty()) {
    const HostTensor tensor = HostTensor::from_values<float>({n, classes}, logits);
    write_output_file(e.out, "--out", [&](OutputFile& file) { write_npy(file, tensor); });
    fmt::print("logits [{}, {}] written to {}\n", n, classes, e.out);
  } else {
    for (int64_t i = 0; i < std::min<int64_t>(n, 8); ++i) {
      const float* row = logits.data() + i * classes;
      const int64_t best = std::max_element(row, row + classes) - row;
      fmt::print("image {:>4}: class {:>4}{} (logit {:.4f})\n", i, best,
                 class_names.empty() ? "" : " " + class_names[static_cast<size_t>(best)], row[best]);
    }
    if (n > 8) fmt::print("... ({} images; --out FILE.npy writes all logits)\n", n);
  }
  if (!e.labels.empty()) {
    const float loss = softmax_cross_entropy<float>(logits.data(), labels.data(), n, classes, nullptr);
    EvalTotals totals;
    accumulate_eval(logits.data(), labels.data(), n, classes, totals);
    fmt::print("mean cross-entropy {:.6f} | accuracy (top-1) {:.2f}% ({} of {}) | top-5 {:.2f}%\n", loss,
               100.0 * static_cast<double>(totals.top1) / static_cast<double>(n), totals.top1, n,
               100.0 * static_cast<double>(totals.top5) / static_cast<double>(n));
  }
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto e = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Logits (and mean cross-entropy with --labels) for a batch of images");
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("--model", e->model, "model shape the weights belong to (see `ddpx model --help`)");
  cmd->add_option("--weights", e->weights,
                  ".safetensors with torchvision names (from `ddpx train --save`, its class names are printed "
                  "beside the classes)")
      ->required();
  cmd->add_option("--images", e->images, ".npy images [N, C, H, W] float32")->required();
  cmd->add_option("--labels", e->labels, ".npy labels [N] int64/int32: also print mean cross-entropy and accuracy");
  cmd->add_option("--out", e->out,
                  "write logits [N, classes] float32 to this .npy (written like train's outputs: atomically, a "
                  "symlink's target, /dev/null in place; never onto --weights, --images or --labels)");
  cmd->add_option("--device", e->device, "cpu | cuda");
  cmd->add_option("--precision", e->precision, "fp32 | tf32 | bf16 (cuda)");
  cmd->add_option("--batch", e->batch, "images per forward pass");
  return {cmd, [e] { return run_eval(*e); }};
}

}  // namespace ddpx::cli
