// `ddpx data-preview SOURCE --out grid.png`: what the loader gives the model, for a person to look at and to
// compare with their own pipeline. One batch of an image source (the first, or --step's) after the train
// transform (the one `ddpx train --data SOURCE` applies, RandomResizedCrop + flip for photographs, --randaugment,
// --trivial-augment or --auto-augment-policy when given, and --random-erase's boxes painted in the colour an erased
// pixel has after Normalize, the mean, and listed per tile) or with --eval the eval transform (`--val SOURCE`'s: Resize(int(size / 0.875)) + CenterCrop), drawn
// as a grid with each tile's class index under it (data/batch_preview.hpp); beside it OUT with .json names each
// tile's sample, label and class. --dump X.npy writes the same batch as the model's input, float32 [N, C, H, W]
// after Normalize (torchvision's ToTensor + Normalize; `ddpx eval --images` reads it), --dump-labels Y.npy its
// labels (int64 [N]). The batch is the one a 1-rank run of batch --count draws at that step with that --seed.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "data/batch_preview.hpp"
#include "data/data_sources.hpp"
#include "data/data_spec.hpp"
#include "data/image_dataset.hpp"
#include "io/npy.hpp"
#include "io/output_file.hpp"
#include "io/same_file.hpp"

namespace ddpx::cli {
namespace {

struct PreviewFlags {
  std::string source, out, dump, dump_labels, randaugment, auto_augment_policy, random_erase, mean, std,
      jpeg_scaled_decode = "on";
  bool eval = false, trivial_augment = false;
  int64_t count = 16, size = 224, channels = 3, step = 0, columns = 0, val_resize_size = 0;
  uint64_t seed = 0;
};

// Each box in the mean colour (round(mean x 255)): the pixel a 0 after Normalize stands for.
void paint_erased_boxes(const std::vector<ErasingBox>& boxes, const std::vector<float>& mean, int size, int channels,
                        uint8_t* pixels) {
  for (size_t i = 0; i < boxes.size(); ++i) {
    const ErasingBox& box = boxes[i];
    uint8_t* image = pixels + static_cast<int64_t>(i) * size * size * channels;
    for (int y = box.top; y < box.top + box.height; ++y)
      for (int x = box.left; x < box.left + box.width; ++x)
        for (int c = 0; c < channels; ++c)
          image[(static_cast<int64_t>(y) * size + x) * channels + c] = static_cast<uint8_t>(
              std::lround(std::clamp(mean[static_cast<size_t>(c)], 0.f, 1.f) * 255.f));
  }
}

std::string side_json_path(const std::string& out) {
  return std::filesystem::path(out).replace_extension(".json").string();
}

int run_preview(const PreviewFlags& f) {
  DDPX_REQUIRE(f.count >= 1 && f.count <= 1024, "--count {}: give 1 to 1024 images", f.count);
  DDPX_REQUIRE(f.size >= 1 && f.size <= 4096, "--size {}: give the model's input side, 1 to 4096 pixels", f.size);
  DDPX_REQUIRE(f.channels == 1 || f.channels == 3, "--channels {}: give 1 (gray) or 3 (RGB)", f.channels);
  DDPX_REQUIRE(f.step >= 0, "--step {}: give a batch number >= 0", f.step);
  DDPX_REQUIRE(f.columns >= 0, "--columns {}: give 0 (about square) or a positive count", f.columns);
  DDPX_REQUIRE(std::filesystem::path(f.out).extension() != ".json",
               "--out {}: the tile list goes to the same name with .json; give the grid a .png name", f.out);
  const std::string side = side_json_path(f.out);
  std::vector<FileRole> outputs = {{"--out", f.out}, {"--out's tile list", side}};
  if (!f.dump.empty()) outputs.push_back({"--dump", f.dump});
  if (!f.dump_labels.empty()) outputs.push_back({"--dump-labels", f.dump_labels});
  for (const FileRole& output : outputs) (void)check_output_path(output.path, output.flag);
  require_distinct_files(std::span<const FileRole>(), outputs);

  const DataSpec spec = parse_data_spec(f.source, DataOrigin::preview_source);
  std::unique_ptr<SampleSource> source = open_sample_source(spec);  // once: the dataset below wraps it
  DatasetContext context;
  context.shape = DataShape{f.channels, f.size, std::max<int64_t>(source->num_classes(), 1)};
  context.seed = f.seed;
  context.training = !f.eval;
  context.images.augmentation = f.eval ? Augmentation::resize : Augmentation::automatic;
  context.images.auto_augment = choose_auto_augment(f.randaugment, f.trivial_augment, f.auto_augment_policy);
  DDPX_REQUIRE(!f.eval || !context.images.auto_augment.enabled(),
               "{} with --eval: {} is applied to training data only; drop one", context.images.auto_augment.flag(),
               context.images.auto_augment.describe());
  if (!f.random_erase.empty()) {
    context.images.random_erasing = parse_random_erase(f.random_erase);
    DDPX_REQUIRE(!f.eval || !context.images.random_erasing.enabled(),
                 "--random-erase {} with --eval: RandomErasing is applied to training data only; drop one",
                 f.random_erase);
  }
  DDPX_REQUIRE(f.val_resize_size == 0 || f.eval, "--val-resize-size {} sets the eval transform's resize: add --eval",
               f.val_resize_size);
  context.images.eval_resize = f.val_resize_size;
  DDPX_REQUIRE(f.jpeg_scaled_decode == "on" || f.jpeg_scaled_decode == "off",
               "--jpeg-scaled-decode '{}' is not known; choose on or off", f.jpeg_scaled_decode);
  context.images.dct_scaling = f.jpeg_scaled_decode == "on";
  if (!f.mean.empty()) context.images.normalization.mean = parse_float_list(f.mean, "--mean");
  if (!f.std.empty()) context.images.normalization.std = parse_float_list(f.std, "--std");
  const ImageDataset dataset(std::move(source), context, spec.as_typed());
  const int64_t available = dataset.source().size();
  DDPX_REQUIRE(f.count <= available, "--count {}: {} has {} images; give --count {} or fewer", f.count,
               dataset.source().describe(), available, available);
  const int64_t batches = dataset.batches_per_epoch(1, f.count);
  DDPX_REQUIRE(batches == 0 || f.step < batches || !f.eval,
               "--step {} with --eval: the eval order has {} batches of {}; give --step {} or less", f.step, batches,
               f.count, batches - 1);

  std::vector<uint8_t> pixels(static_cast<size_t>(f.count * dataset.shape().image_numel()));
  std::vector<int32_t> labels(static_cast<size_t>(f.count));
  dataset.fill_pixels(f.step, 0, 1, f.count, pixels.data(), labels.data());
  const std::vector<std::string> names = dataset.picked_names(f.step, 0, 1, f.count);
  // --random-erase: the boxes fill_batch zeroes after Normalize, drawn in what 0 means there (the mean colour).
  const std::vector<ErasingBox> erased = dataset.erasing_boxes(f.step, 0, 1, f.count);
  paint_erased_boxes(erased, context.images.normalization.mean_for(f.channels), static_cast<int>(f.size),
                     static_cast<int>(f.channels), pixels.data());
  const int columns = static_cast<int>(f.columns > 0 ? f.columns : std::ceil(std::sqrt(static_cast<double>(f.count))));
  const PreviewGrid grid = preview_grid(pixels.data(), f.count, static_cast<int>(f.size), static_cast<int>(f.channels),
                                        labels.data(), columns);
  const std::vector<uint8_t> png = encode_png(grid);
  write_output_file(f.out, "--out", [&](OutputFile& file) { file.write(png.data(), png.size()); });

  const std::vector<std::string> classes = dataset.class_names();
  nlohmann::json tiles = nlohmann::json::array();
  for (int64_t i = 0; i < f.count; ++i) {
    const int32_t label = labels[static_cast<size_t>(i)];
    tiles.push_back({{"tile", i},
                     {"row", i / grid.columns},
                     {"column", i % grid.columns},
                     {"label", label},
                     {"class", static_cast<size_t>(label) < classes.size() ? nlohmann::json(classes[size_t(label)])
                                                                           : nlohmann::json(nullptr)},
                     {"sample", names[static_cast<size_t>(i)]}});
    const ErasingBox& box = erased[static_cast<size_t>(i)];
    if (!box.empty())
      tiles.back()["erased"] = {{"top", box.top}, {"left", box.left}, {"height", box.height}, {"width", box.width}};
  }
  const nlohmann::json listing = {{"source", dataset.source().describe()},
                                  {"transform", dataset.describe()},
                                  {"eval", f.eval},
                                  {"seed", f.seed},
                                  {"step", f.step},
                                  {"size", f.size},
                                  {"channels", f.channels},
                                  {"grid", f.out},
                                  {"tiles", tiles}};
  write_output_text(side, "--out's tile list", listing.dump(1) + "\n");

  if (!f.dump.empty()) {
    std::vector<float> images(pixels.size());
    std::vector<int32_t> same_labels(labels.size());
    dataset.fill_batch(f.step, 0, 1, f.count, images.data(), same_labels.data());  // the same draws, normalized
    write_npy(f.dump, HostTensor::from_values<float>({f.count, f.channels, f.size, f.size}, std::span(images)));
  }
  if (!f.dump_labels.empty()) {
    const std::vector<int64_t> wide(labels.begin(), labels.end());
    write_npy(f.dump_labels, HostTensor::from_values<int64_t>({f.count}, std::span(wide)));
  }
  fmt::print("ddpx data-preview: {} images, step {}, seed {}: {}\n"
             "  grid: {} ({} x {} tiles of {} px, class index under each)\n  tiles: {}\n",
             f.count, f.step, f.seed, dataset.describe(), f.out, grid.columns,
             (f.count + grid.columns - 1) / grid.columns, f.size, side);
  if (!f.dump.empty())
    fmt::print("  images: {} (float32 [{}, {}, {}, {}] after Normalize)\n", f.dump, f.count, f.channels, f.size,
               f.size);
  if (!f.dump_labels.empty()) fmt::print("  labels: {} (int64 [{}])\n", f.dump_labels, f.count);
  return 0;
}

}  // namespace

Command add_data_preview_command(CLI::App* cmd) {
  const auto f = command_flags<PreviewFlags>(cmd, HelpDefaults::per_flag);
  cmd->add_option("SOURCE", f->source, "an image source as --data takes it: folder:DIR, idx:DIR[:train|test], "
                                       "pack:FILE, wds:SHARDS")
      ->required();
  cmd->add_option("--out", f->out, "the grid PNG to write; the tile list goes beside it as .json")->required();
  cmd->add_flag("--eval", f->eval,
                "the eval transform (--val's: Resize(int(size / 0.875)) + CenterCrop(size), in order) instead of "
                "training's (RandomResizedCrop + flip for photographs, shuffled)");
  cmd->add_option("--val-resize-size", f->val_resize_size,
                  "with --eval: the side Resize makes the shorter one before CenterCrop(--size) (torchvision's "
                  "--val-resize-size; 0: int(size / 0.875))")
      ->capture_default_str();
  cmd->add_option("--jpeg-scaled-decode", f->jpeg_scaled_decode,
                  "on | off, as ddpx train's: large JPEG crops decoded at reduced scale, or always at full size")
      ->capture_default_str();
  cmd->add_option("--count", f->count, "images in the batch (1 to 1024)")->capture_default_str();
  cmd->add_option("--size", f->size, "the model's input side in pixels")->capture_default_str();
  cmd->add_option("--channels", f->channels, "the model's channels: 3 (RGB) or 1 (gray)")->capture_default_str();
  cmd->add_option("--step", f->step, "which batch: the one step N of a 1-rank run of batch --count draws")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "the run's --seed (the order and the random crops follow it)")
      ->capture_default_str();
  cmd->add_option("--columns", f->columns, "tiles per row (0: about square)")->capture_default_str();
  cmd->add_option("--randaugment", f->randaugment, "N,M: the train transform + RandAugment, as ddpx train's");
  cmd->add_flag("--trivial-augment", f->trivial_augment, "the train transform + TrivialAugmentWide, as ddpx train's");
  cmd->add_option("--auto-augment-policy", f->auto_augment_policy,
                  "imagenet | cifar10 | svhn: the train transform + AutoAugment, as ddpx train's");
  cmd->add_option("--random-erase", f->random_erase,
                  "P: RandomErasing(p=P) as ddpx train's: in --dump the boxes are 0, in the grid the mean colour, "
                  "and OUT.json lists each tile's box");
  cmd->add_option("--mean", f->mean, "with --dump: Normalize's mean, as ddpx train's --mean");
  cmd->add_option("--std", f->std, "with --dump: Normalize's std, as ddpx train's --std");
  cmd->add_option("--dump", f->dump,
                  "also write the batch as the model's input: float32 [N, C, H, W] after Normalize (.npy; ddpx "
                  "eval --images reads it)");
  cmd->add_option("--dump-labels", f->dump_labels, "also write the batch's labels: int64 [N] (.npy)");
  return command_running(cmd, f, run_preview);
}

}  // namespace ddpx::cli
