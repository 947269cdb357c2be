// Fuzz target: the WebDataset shard reader (WdsSource: `--data wds:SHARDS`).
// The reader must guarantee, for any bytes: no crash, no hang, memory bounded by the shard's size, every refusal a
// ddpx::Error naming the shard; an accepted shard reads every sample's image bytes.
// Two modes, by the input's first byte: even, the rest is the tar file itself; odd, the rest is a list of
// structure-aware edits of a valid shard's member headers (size and type fields at boundary values or raw bytes,
// the header checksum recomputed; tests/fuzz/structured_files.hpp).
#include <cstddef>
#include <cstdint>

#include "data/wds_source.hpp"
#include "fuzz_support.hpp"
#include "structured_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::vector<uint8_t> seed = ddpx::fuzz::seed_tar();
  static const std::vector<ddpx::fuzz::Field> fields = ddpx::fuzz::tar_fields(seed);
  const std::vector<uint8_t> file = ddpx::fuzz::raw_or_edited(data, size, seed, fields, ddpx::fuzz::edit_tar);
  const auto path = ddpx::fuzz::write_scratch_file("input.tar", file.data(), file.size());
  ddpx::fuzz::expect_clean_refusal([&] {
    const ddpx::WdsSource wds(path.string(), ddpx::DataOrigin::train_data);
    std::vector<uint8_t> scratch;
    for (int64_t i = 0; i < wds.size(); ++i) wds.read(i, scratch);
  });
  return 0;
}
