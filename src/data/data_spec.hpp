// DataSpec: what --data (or --val) names, parsed once into a type where the flags are read.
// Guarantees:
//  - parse_data_spec() accepts exactly the syntaxes of the registry's rows (data/data_sources.hpp) and throws
//    ddpx::Error naming the flag, the text and every accepted syntax otherwise.
//  - text() is the canonical spelling: parse_data_spec(spec.text()) == spec for every accepted spec (the checkpoint
//    and the run report store it; --resume compares it).
//  - Nothing here opens a file: existence and contents are checked by the source when it is built.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

// One per registry row (data/data_sources.cpp); image sources give uint8 images, epochs and a sampler.
enum class DataSource { synthetic, learnable, synthetic_device, npy, idx, folder, pack, wds };
enum class DataSplit { train, test };  // idx: the train-* or t10k-* files

struct DataSpec {
  DataSpec() = default;
  DataSpec(DataSource kind) : source(kind) {}  // NOLINT: implicit, so `options.data = DataSource::learnable` reads well
  DataSource source = DataSource::synthetic;
  std::string location;              // idx, folder: a directory; pack: a file; wds: a shard pattern
  DataSplit split = DataSplit::train;  // idx only
  std::string images, labels;        // npy only (--images/--labels)

  std::string text() const;
  bool is_image_source() const;  // idx, folder, pack, wds
  bool has_epochs() const;       // image sources and npy: a known size, cut into epochs by EpochSampler
  bool operator==(const DataSpec&) const = default;
};

// `flag` is "--data" or "--val", for the messages.
DataSpec parse_data_spec(std::string_view text, std::string_view flag);

enum class Augmentation;
Augmentation parse_augmentation(std::string_view text);      // --augment auto | crop-flip | resize
// --shuffle-buffer auto | N (a whole number of samples, 0 or more): N, or kAutoShuffleBuffer (data/dataset.hpp).
int64_t parse_shuffle_buffer(std::string_view text);
std::string shuffle_buffer_text(int64_t buffer);  // "auto" or the number, as the flag takes it
std::vector<float> parse_float_list(std::string_view text, std::string_view flag);  // --mean 0.5,0.5,0.5
std::string_view data_source_name(DataSource source);  // the row's name: "idx", "synthetic-device", ...

}  // namespace ddpx
