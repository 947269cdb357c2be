// DataSource: which kind of data --data (or --val) names, one value per row of the data-source registry
// (data/data_source_row.hpp). Its own header so that the spec (data/data_spec.hpp) and the registry's row type both
// name it without including each other.
#pragma once

namespace ddpx {

// One per registry row (data/data_sources.cpp); image sources give uint8 images, epochs and a sampler.
enum class DataSource { synthetic, learnable, synthetic_device, npy, idx, folder, pack, wds };

}  // namespace ddpx
