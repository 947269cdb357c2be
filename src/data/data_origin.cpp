// The flags data specs come from; see data_origin.hpp.
#include "data/data_origin.hpp"

#include "core/internal_assert.hpp"

namespace ddpx {

std::string_view origin_flag(DataOrigin origin) {
  switch (origin) {
    case DataOrigin::train_data: return "--data";
    case DataOrigin::train_val: return "--val";
    case DataOrigin::eval_data: return "ddpx eval --data";
    case DataOrigin::pack_source: return "ddpx pack SOURCE";
    case DataOrigin::preview_source: return "ddpx data-preview SOURCE";
    case DataOrigin::bench_source: return "ddpx data-bench SOURCE";
  }
  DDPX_INTERNAL_FAIL("data origin {} has no flag", static_cast<int>(origin));
}

}  // namespace ddpx
