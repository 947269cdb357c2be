// Fuzz target: recorded GPU topologies (load_topology: `ddpx topo --from-json FILE`, written by `ddpx topo
// --json`), followed by the tables `ddpx topo` prints from an accepted one.
// The reader must guarantee, for any bytes: no crash, no hang, no unbounded memory, every refusal a ddpx::Error
// naming the file and field; an accepted table is square with known link names, so formatting never fails.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "topology/nccl_transport.hpp"
#include "topology/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ddpx::fuzz::write_scratch_file("topology.json", data, size);
  ddpx::fuzz::expect_clean_refusal([&] {
    const ddpx::TopologyTable table = ddpx::load_topology(path.string());
    (void)ddpx::format_topology(table);
    (void)ddpx::format_transport_prediction(table, false);
    (void)ddpx::format_transport_prediction(table, true);
  });
  return 0;
}
