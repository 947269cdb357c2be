// DataSpec: what --data (or --val) names, parsed once into a type where the flags are read.
// Guarantees:
//  - parse_data_spec() accepts exactly the syntaxes of the registry's rows (data/data_source_row.hpp) and throws
//    ddpx::Error naming the flag, the text and every accepted syntax otherwise; the spec keeps the flag it came
//    from (`origin`, data/data_origin.hpp) and every source opened from it names that flag in its errors.
//  - text() is the canonical spelling: parse_data_spec(spec.text(), origin) == spec for every accepted spec (the
//    checkpoint and the run report store it; --resume compares it). Equality ignores the origin: --data X and --val X
//    name the same data.
//  - Nothing here opens a file: existence and contents are checked by the source when it is built.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_origin.hpp"
#include "data/data_source_kind.hpp"
#include "data/data_split.hpp"

namespace ddpx {

struct DataSpec {
  DataSpec() = default;
  DataSpec(DataSource kind) : source(kind) {}  // NOLINT: implicit, so `options.data = DataSource::learnable` reads well
  DataSource source = DataSource::synthetic;
  std::string location;              // idx, folder: a directory; pack: a file; wds: a shard pattern
  DataSplit split = DataSplit::train;  // idx only
  std::string images, labels;        // npy only (--images/--labels)
  DataOrigin origin = DataOrigin::train_data;  // the flag that named it, for messages (set by parse_data_spec)

  std::string text() const;
  std::string as_typed() const;  // the flag and the text, for messages: "--val folder:D", "ddpx pack SOURCE idx:D:train"
  bool is_image_source() const;  // idx, folder, pack, wds
  bool has_epochs() const;       // image sources and npy: a known size, cut into epochs by EpochSampler
  bool operator==(const DataSpec& other) const {
    return source == other.source && location == other.location && split == other.split &&
           images == other.images && labels == other.labels;
  }
};

// `origin`: the flag the text was given to (--data, --val, ddpx pack SOURCE, ...), named by the messages here and
// kept in the spec for the source's own.
DataSpec parse_data_spec(std::string_view text, DataOrigin origin);

enum class Augmentation;
Augmentation parse_augmentation(std::string_view text);      // --augment auto | crop-flip | resize
// --shuffle-buffer auto | N (a whole number of samples, 0 or more): N, or kAutoShuffleBuffer (data/dataset.hpp).
int64_t parse_shuffle_buffer(std::string_view text);
std::string shuffle_buffer_text(int64_t buffer);  // "auto" or the number, as the flag takes it
std::vector<float> parse_float_list(std::string_view text, std::string_view flag);  // --mean 0.5,0.5,0.5
std::string_view data_source_name(DataSource source);  // the row's name: "idx", "synthetic-device", ...

}  // namespace ddpx
