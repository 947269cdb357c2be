// Which transport NCCL uses between two GPUs: predicted from the topology, and read back from NCCL's own log.
// Guarantees:
//  - predict_nccl_transport() follows NCCL 2.2x's defaults: NVLink (NV#) and PCIe paths through switches only
//    (PIX, PXB) use "P2P/CUMEM"; paths through the CPU (PHB, NODE, SYS) use "SHM" (NCCL's default P2P level is
//    PXB; exceptions: on AMD hosts with at most 2 GPUs NCCL also uses P2P across the CPU, and NCCL_P2P_LEVEL
//    overrides); NCCL_P2P_DISABLE=1 forces "SHM" on one host; "NET" (peers on another host) uses "NET". The log
//    has the final word: compare with parse_nccl_transports() on an NCCL_DEBUG=INFO run.
//  - parse_nccl_transports() reads the "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read" lines (older forms
//    "Channel 02 : 3[3] -> 0[0] via SHM/direct/direct", "[send] via NET/Socket/0", "via P2P/direct pointer" and
//    hex bus ids in brackets included) and ignores every other line, as well as lines longer than 4096 bytes and
//    numbers too large for an int, which NCCL does not write: any text is parsed without an error or a crash.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.hpp"

namespace ddpx {

// "P2P/CUMEM", "SHM" or "NET" for a link name (NV#, PIX, PXB, PHB, NODE, SYS, or NET for another host). Throws
// ddpx::Error naming the link for "X" (a GPU to itself) and unknown names.
std::string predict_nccl_transport(std::string_view link, bool p2p_disabled);

// The family of a logged transport, in the words predict_nccl_transport() uses: "P2P/CUMEM/read" -> "P2P/CUMEM",
// "P2P/IPC" -> "P2P/IPC", "P2P/direct pointer" -> "P2P/direct", "SHM/direct/direct" -> "SHM",
// "NET/IB/0" -> "NET", "COLLNET..." -> "COLLNET", anything else unchanged.
std::string transport_family(std::string_view transport);

struct NcclConnection {
  int channel = 0;
  int from_rank = 0;
  int to_rank = 0;
  std::string transport;  // as logged: "P2P/CUMEM/read"
  bool operator==(const NcclConnection&) const = default;
};

struct NcclTransportSummary {
  std::vector<NcclConnection> connections;   // in log order
  std::map<std::string, int> family_counts;  // transport_family -> connections
  std::string main_family;                   // the most frequent family ("" when the log has none)
  std::string main_transport;                // its most frequent full string, e.g. "P2P/CUMEM/read"
};

NcclTransportSummary parse_nccl_transports(std::string_view log);

// One line per GPU pair: "GPU0 - GPU1  NV18  -> P2P/CUMEM" (for `ddpx topo`).
std::string format_transport_prediction(const TopologyTable& table, bool p2p_disabled);

}  // namespace ddpx
