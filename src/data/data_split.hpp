// DataSplit: which files of an idx directory a source reads (train-* or t10k-*). Its own header so that the idx
// reader (data/idx_source.hpp) names it without including the data-spec parser.
#pragma once

namespace ddpx {

enum class DataSplit { train, test };  // idx: the train-* or t10k-* files

}  // namespace ddpx
