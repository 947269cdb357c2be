// Gloo mesh: connects full-mesh Gloo contexts (one TCP connection per pair of ranks each) from addresses that one
// caller-provided all-gather of small byte payloads carries, what gloo::rendezvous::Context::connectFullMesh does
// over a key-value store. Guarantees:
//  - One exchange for all `count` contexts: the payload holds, per context and per rank, the address of this
//    rank's pair that waits for that rank (each Gloo TCP pair listens on its own socket), about 140 bytes each.
//  - Every rank connects its pairs in the same order; each connect gives up after `timeout` (the contexts'
//    timeout). A payload that is not in this build's form, or a failed connect, is a ddpx::Error naming both ranks.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace gloo {
class Context;
namespace transport {
class Device;
}
}  // namespace gloo

namespace ddpx {

// All-gather of small byte payloads over the job's ranks: returns one payload per rank, rank r's at index r.
using BytesAllGather = std::function<std::vector<std::vector<uint8_t>>(const std::vector<uint8_t>& mine)>;

std::vector<std::shared_ptr<gloo::Context>> connect_gloo_meshes(int rank, int size, int count,
                                                                const std::shared_ptr<gloo::transport::Device>& device,
                                                                std::chrono::milliseconds timeout,
                                                                const BytesAllGather& exchange);

}  // namespace ddpx
