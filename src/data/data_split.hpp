// DataSplit: which files of an idx directory a source reads (train-* or t10k-*). Its own header so that the idx
// reader (data/idx_source.hpp) names it without including the data-spec parser (which includes the source registry,
// which includes the idx reader): the reader stays out of the registry's loop with the parser, the one room loop
// tools/structure_counts.py still counts.
#pragma once

namespace ddpx {

enum class DataSplit { train, test };  // idx: the train-* or t10k-* files

}  // namespace ddpx
