// The data-source registry: one row per source (name, syntax, help, how it is built; the row's type is in
// data/data_source_row.hpp). A new source is one class and one row in data_sources.cpp; --data's parser, --help
// and make_dataset() read the rows, nothing else lists the sources.
// Guarantees:
//  - every DataSource value has exactly one row (checked by the tests);
//  - open_data() is the one opener of a spec's files: a command opens each source once into an OpenedData (the
//    source, its class names, size, fingerprint and files) and makes its datasets from that value, never from the
//    spec again (Note [Data opened once]); data_opens() counts the opens per origin, so tests can hold a command
//    to one open per source;
//  - every source opened here gets the spec's origin (data/data_origin.hpp): its errors name the flag the user
//    typed (--val, ddpx pack SOURCE, ...), never --data for another flag.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_source_row.hpp"
#include "data/data_spec.hpp"
#include "data/dataset.hpp"
#include "data/sample_source.hpp"

namespace ddpx {

std::string data_sources_help();  // "synthetic (...) | learnable (...) | idx:DIR[:train|test] (...) | ..."
// A spec opened once: what every part of a command reads of its data.
struct OpenedData {
  DataSpec spec;  // with its origin: the flag the user typed
  // Image sources (idx, folder, pack, wds): the opened source, shared by the datasets made from this value. Null
  // for synthetic data and npy (its files are read once, by the one dataset make_dataset() builds: it needs the
  // model's input shape to check them).
  std::shared_ptr<const SampleSource> samples;
  std::vector<std::string> class_names;  // label = index; empty where the source names none
  int64_t num_classes = 0;  // the source's class count; 0: the data does not say (synthetic, npy)
  int64_t size = 0;         // samples; 0: endless, or npy (counted by its dataset)
  std::string fingerprint;  // data_fingerprint(); empty without samples
  // The files and folders the samples come from, each role naming the flag and the spec ("--val folder:D"): no
  // output of the command may be one of them or lie inside one (io/same_file.hpp).
  std::vector<FileRole> inputs;
};

// Opens the spec's source (image sources); synthetic and npy specs are kept for make_dataset(). Errors name
// spec.origin's flag, the file and what to do.
OpenedData open_data(const DataSpec& spec);
// The dataset of opened data: image sources wrap the opened source (nothing is read again), the others are built
// from their row (npy reads its files here, once). make_dataset(spec, context) (data/dataset.hpp) is
// make_dataset(open_data(spec), context).
std::unique_ptr<Dataset> make_dataset(const OpenedData& data, const DatasetContext& context);
// The samples of an image source, opened; an error naming spec.origin's flag for a source that has none
// (synthetic, npy). open_data() calls it; commands that read samples without a dataset (ddpx pack, data-preview,
// data-bench) call it once.
std::unique_ptr<SampleSource> open_sample_source(const DataSpec& spec);
// How many times this process opened a source (a row's open, or its make for sources without samples) for specs
// of this origin: the counting hook of Note [Data opened once].
int64_t data_opens(DataOrigin origin);

// --val's dataset: the eval transform, no shuffle; refused when its class names differ from the training data's
// (both named: a folder's val/ with a class train/ lacks would give silently wrong labels).
std::unique_ptr<Dataset> make_val_dataset(const OpenedData& val, const Dataset& train, const DataSpec& train_spec,
                                          DatasetContext context);

}  // namespace ddpx
