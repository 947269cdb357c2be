// Deterministic random numbers shared by initialization, synthetic data and PowerSGD.
// Guarantee: a Rng's whole state is two 64-bit words (save/restore gives bit-identical continuation), and the
// same seed produces the same stream on every platform (no std:: distributions, whose output is unspecified).
#pragma once
#include <cmath>
#include <cstdint>

namespace ddpx {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0x5eed) { reseed(seed); }

  void reseed(uint64_t seed) {
    state_ = splitmix(seed);
    inc_ = splitmix(seed ^ 0x9e3779b97f4a7c15ULL) | 1u;
    has_spare_ = false;
  }

  // PCG-XSL-RR-like 64-bit output from an LCG; good enough for ML initialization and data.
  uint64_t next_u64() {
    state_ = state_ * 6364136223846793005ULL + inc_;
    uint64_t x = state_;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return n ? next_u64() % n : 0; }
  // Standard normal (Box-Muller; the spare value is part of the state).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(6.283185307179586 * u2);
    has_spare_ = true;
    return r * std::cos(6.283185307179586 * u2);
  }
  // Truncated normal on [lo, hi] by rejection (what torch.nn.init.trunc_normal_ samples).
  double truncated_normal(double mean, double std, double lo, double hi) {
    for (;;) {
      double v = mean + std * normal();
      if (v >= lo && v <= hi) return v;
    }
  }

  struct State {
    uint64_t state, inc;
    double spare;
    bool has_spare;
  };
  State save() const { return {state_, inc_, spare_, has_spare_}; }
  void restore(const State& s) {
    state_ = s.state;
    inc_ = s.inc;
    spare_ = s.spare;
    has_spare_ = s.has_spare;
  }

 private:
  static uint64_t splitmix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t state_ = 0, inc_ = 1;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace ddpx
