// torch.randperm's CPU draw (see torch_randperm.hpp).
#include "data/torch_randperm.hpp"

#include <numeric>
#include <random>
#include <utility>

#include "core/error.hpp"

namespace ddpx {

std::vector<int64_t> torch_randperm(int64_t n, uint64_t seed) {
  DDPX_REQUIRE(n >= 0 && n < kTorchRandpermMax,
               "a torch-exact random permutation of {} samples: supported below {} samples (torch draws 64-bit "
               "numbers from there)", n, kTorchRandpermMax);
  std::mt19937 engine(static_cast<std::mt19937::result_type>(seed & 0xffffffffULL));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t z = static_cast<int64_t>(static_cast<uint32_t>(engine()) % static_cast<uint64_t>(n - i));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(z + i)]);
  }
  return perm;
}

}  // namespace ddpx
