// Fuzz target: peak bandwidth tables (load_peak_table: `ddpx report --peak FILE`, written by `ddpx allreduce
// --json`), followed by the interpolation an accepted table is used for.
// The reader must guarantee, for any bytes: no crash, no hang, no unbounded memory, every refusal a ddpx::Error
// naming the file and field; an accepted table answers busbw_at() for any size with a finite, positive value.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "analysis/comm_stats.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ddpx::fuzz::write_scratch_file("peak.json", data, size);
  ddpx::fuzz::expect_clean_refusal([&] {
    const ddpx::PeakTable table = ddpx::load_peak_table(path.string());
    for (const int64_t bytes : {int64_t{1}, int64_t{1000}, int64_t{1} << 20, int64_t{1} << 40, INT64_MAX}) {
      const double busbw = table.busbw_at(bytes);
      if (!table.empty() && !(std::isfinite(busbw) && busbw > 0)) {
        std::fprintf(stderr, "ddpx fuzz: busbw_at(%lld) = %g\n", static_cast<long long>(bytes), busbw);
        std::abort();
      }
    }
    nlohmann::json out;
    to_json(out, table);
    (void)out.dump();
  });
  return 0;
}
