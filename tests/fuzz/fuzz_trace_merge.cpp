// Fuzz target: Chrome/Perfetto trace files read back for merging (merge_trace_files: each rank's `--trace` file)
// and the trace checker that validates them (check_trace, and check_trace_file: `ddpx report --check-trace`).
// The reader must guarantee, for any bytes: no crash, no hang, no unbounded memory, every refusal a ddpx::Error
// naming the file or input; the input is merged with a valid one-rank trace, so a clash of ranks is exercised too.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "core/json_parse.hpp"
#include "analysis/trace_writer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string other = [] {
    ddpx::TraceWriter trace;
    trace.add_event(1, "compute", "Batch 0", 0.0, 1.0);
    const std::string path = (ddpx::fuzz::scratch_dir() / "rank1.trace.json").string();
    std::ofstream(path) << trace.to_json().dump();
    return path;
  }();
  const auto path = ddpx::fuzz::write_scratch_file("rank0.trace.json", data, size);
  const std::string merged = (ddpx::fuzz::scratch_dir() / "merged.trace.json").string();
  ddpx::fuzz::expect_clean_refusal([&] { ddpx::merge_trace_files({path.string(), other}, merged); });
  ddpx::fuzz::expect_clean_refusal([&] {
    std::ifstream in(path);
    nlohmann::json trace;
    try {
      trace = ddpx::parse_json(in, "trace");
    } catch (const nlohmann::json::exception&) {
      return;  // not JSON: merge_trace_files above refuses it
    }
    (void)ddpx::check_trace(trace);
  });
  ddpx::fuzz::expect_clean_refusal([&] { (void)ddpx::check_trace_file(path.string()); });
  return 0;
}
