// Fuzz target: the pack reader (PackSource: `--data pack:FILE`, `ddpx pack pack:FILE OUT`).
// The reader must guarantee, for any bytes: no crash, no hang, memory bounded by the file's size, every refusal a
// ddpx::Error naming the file; an accepted pack reads every record (each checked against its CRC-32).
// Two modes, by the input's first byte: even, the rest is the file itself (mutation finds damaged files); odd,
// the rest is a list of structure-aware edits (tests/fuzz/structured_files.hpp) applied to a valid pack, each
// setting a header or index field to a boundary value (0, 1, max, 2^63, 2^64 - small, offsets into the header and
// past the end) or to raw bytes, with every CRC recomputed, so the edit reaches the bounds checks (issue 48: the
// entry at 2^64 - 8 that random mutation never built).
#include <cstddef>
#include <cstdint>

#include "data/pack_source.hpp"
#include "fuzz_support.hpp"
#include "structured_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::vector<uint8_t> seed = ddpx::fuzz::seed_pack();
  static const std::vector<ddpx::fuzz::Field> fields = ddpx::fuzz::pack_fields(seed);
  const std::vector<uint8_t> file = ddpx::fuzz::raw_or_edited(data, size, seed, fields, ddpx::fuzz::edit_pack);
  const auto path = ddpx::fuzz::write_scratch_file("input.pack", file.data(), file.size());
  ddpx::fuzz::expect_clean_refusal([&] {
    const ddpx::PackSource pack(path.string(), ddpx::DataOrigin::train_data);
    std::vector<uint8_t> scratch;
    for (int64_t i = 0; i < pack.size(); ++i) {
      const ddpx::SampleBytes bytes = pack.read(i, scratch);
      if (bytes.size != scratch.size() || pack.label(i) < 0 || pack.label(i) >= pack.num_classes()) std::abort();
    }
  });
  return 0;
}
