// DataSourceRow: one row of the data-source registry (name, syntax, help, how it is built), and the rows.
// Guarantees:
//  - the rows are defined in one place, data/data_sources.cpp, one per DataSource value (checked by the tests);
//  - this header includes neither the spec parser nor the sources: the parser (data/data_spec.cpp) reads the rows'
//    names and syntaxes, and the registry (data/data_sources.hpp) builds sources from a parsed spec, without the two
//    including each other.
#pragma once
#include <memory>
#include <string_view>
#include <vector>

#include "data/data_source_kind.hpp"

namespace ddpx {

struct DataSpec;
struct DatasetContext;
class Dataset;
class SampleSource;

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

}  // namespace ddpx
