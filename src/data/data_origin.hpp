// DataOrigin: what the user typed to name a data source (the flag or the argument), carried in the DataSpec so that
// every error a source raises names it: `--val folder:D: not a directory`, `ddpx pack SOURCE idx:D: ...`, never
// `--data` for another flag.
// Guarantees: parse_data_spec() (data/data_spec.hpp) sets the origin from its caller; the registry
// (data/data_sources.cpp) hands it to every source it opens (idx, folder, pack, wds) and to every dataset it makes
// (npy's messages name --images/--labels, the flags that give its files); a source's constructor takes it as a
// required argument, so no source can fall back to another flag's name.
#pragma once
#include <string_view>

namespace ddpx {

enum class DataOrigin {
  train_data,      // ddpx train --data
  train_val,       // ddpx train --val
  eval_data,       // ddpx eval --data
  pack_source,     // ddpx pack SOURCE OUT
  preview_source,  // ddpx data-preview SOURCE
  bench_source,    // ddpx data-bench SOURCE
};

// As the user typed it, for messages: "--data", "--val", "ddpx eval --data", "ddpx pack SOURCE",
// "ddpx data-preview SOURCE", "ddpx data-bench SOURCE".
std::string_view origin_flag(DataOrigin origin);

}  // namespace ddpx
