// Fuzz target: NCCL_DEBUG=INFO logs (parse_nccl_transports: `ddpx topo --nccl-log FILE`; the file is read whole,
// at most 256 MiB, by cmd_topo.cpp and handed over as text).
// The parser must guarantee, for any text: no crash (no stack overflow on a long line, no number that does not fit
// escaping as std::out_of_range), no hang, and lines it does not understand are skipped, never an error.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "topology/nccl_transport.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ddpx::fuzz::expect_clean_refusal([&] { (void)ddpx::parse_nccl_transports(ddpx::fuzz::as_text(data, size)); });
  return 0;
}
