// torch.randperm(n, generator=g) on the CPU, bit for bit, for g = torch.Generator().manual_seed(seed): the
// permutation torchvision's RASampler (references/classification/sampler.py) draws each epoch.
// How torch 1.13 draws it (aten's randperm_cpu with a CPUGeneratorImpl): the generator is the standard 32-bit
// Mersenne Twister (mt19937) seeded with the seed's low 32 bits; the result starts as 0..n-1 and for i = 0..n-2
// swaps entry i with entry i + (random() % (n - i)), random() being the engine's next 32-bit output.
// Guarantees: torch_randperm(n, seed) equals torch.randperm for every n and seed in the fixtures of
// tools/make_tv_recipe_fixtures.py (tests/data/test_repeated_augment.cpp); n is refused (ddpx::Error) at and above
// 2^32 / 20, where torch switches to 64-bit draws, which this form does not reproduce.
#pragma once
#include <cstdint>
#include <vector>

namespace ddpx {

inline constexpr int64_t kTorchRandpermMax = (int64_t{1} << 32) / 20;  // exclusive

std::vector<int64_t> torch_randperm(int64_t n, uint64_t seed);

}  // namespace ddpx
