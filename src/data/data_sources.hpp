// The data-source registry: one row per source (name, syntax, help, how it is built). A new source is one class
// and one row in data_sources.cpp; --data's parser, --help and make_dataset() read the rows, nothing else lists
// the sources.
// Guarantee: every DataSource value has exactly one row (checked by the tests).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_spec.hpp"
#include "data/dataset.hpp"
#include "data/sample_source.hpp"

namespace ddpx {

struct DataSourceRow {
  DataSource source;
  std::string_view name;     // the text before the first ':' in --data
  std::string_view syntax;   // as --help shows it
  std::string_view help;
  bool takes_location;       // NAME:LOCATION
  // Exactly one of the two: a dataset of its own (synthetic, npy), or an image source's samples, which
  // make_dataset() wraps in an ImageDataset (sampler, image pipeline) and `ddpx pack`/`data-bench` read directly.
  std::unique_ptr<Dataset> (*make)(const DataSpec& spec, const DatasetContext& context);
  std::unique_ptr<SampleSource> (*open)(const DataSpec& spec);
};

const std::vector<DataSourceRow>& data_source_rows();
const DataSourceRow& data_source_row(DataSource source);
std::string data_sources_help();  // "synthetic (...) | learnable (...) | idx:DIR[:train|test] (...) | ..."
// The samples of an image source; `flag` names where the spec came from ("SOURCE" for ddpx pack) in the error
// for a source that has none (synthetic, npy).
std::unique_ptr<SampleSource> open_sample_source(const DataSpec& spec, std::string_view flag);

// --val's dataset: the eval transform, no shuffle; refused when its class names differ from the training data's
// (both named: a folder's val/ with a class train/ lacks would give silently wrong labels).
std::unique_ptr<Dataset> make_val_dataset(const DataSpec& val, const Dataset& train, const DataSpec& train_spec,
                                          DatasetContext context);

}  // namespace ddpx
