// Dataset's defaults; make_dataset is the registry's (data/data_sources.cpp).
#include "data/dataset.hpp"

#include "core/internal_assert.hpp"

namespace ddpx {

void Dataset::fill_pixels(int64_t, int, int, int64_t, uint8_t*, int32_t*) const {
  DDPX_INTERNAL_FAIL("{}: not an image source, it has no uint8 batches", describe());
}

}  // namespace ddpx
