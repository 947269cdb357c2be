// Fuzz target: the config file `ddpx tune --out` writes and reads back (read_trial_config), in both forms: the
// first input byte picks .cfg (key = value lines) or .json, the rest is the file.
// The reader must guarantee, for any bytes: no crash, no hang, no unbounded memory, and every refusal a
// ddpx::Error naming the file, the line (.cfg) and the key; an accepted config has passed validate().
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "tune/tuner.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool json = data[0] & 1;
  const auto path = ddpx::fuzz::write_scratch_file(json ? "tuned.json" : "tuned.cfg", data + 1, size - 1);
  ddpx::fuzz::expect_clean_refusal([&] { (void)ddpx::read_trial_config(path.string()); });
  return 0;
}
