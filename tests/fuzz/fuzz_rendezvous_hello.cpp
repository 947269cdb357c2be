// Fuzz target: the workers' TCP rendezvous hello as rank 0 reads it (dist/rendezvous_wire.hpp), fed in the pieces
// rank 0 asks for. For any bytes: no crash, no read past what was given, and the guarantee that bounds what an
// unauthenticated peer costs: scan_hello() never asks for more than the 4124-byte header before it says
// `authenticate`, and a payload it then announces is at most 1 MiB.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include "dist/rendezvous_wire.hpp"

namespace {

void require(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "ddpx fuzz: rendezvous hello: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ddpx::HelloScan;
  constexpr size_t kMostBeforeAuthentication = ddpx::kHelloPrefixBytes + ddpx::kMaxRendezvousTokenBytes + 4;
  std::string received;
  const char* bytes = reinterpret_cast<const char*>(data);
  size_t offered = 0;
  bool authenticated = false;
  for (;;) {
    const HelloScan scan = ddpx::scan_hello(std::span<const char>(received.data(), received.size()));
    if (scan.stage == HelloScan::Stage::malformed) break;
    if (scan.stage == HelloScan::Stage::authenticate || scan.stage == HelloScan::Stage::complete) {
      require(scan.header.payload_length <= ddpx::kMaxRendezvousPayloadBytes, "payload above 1 MiB accepted");
      require(scan.header.token.size() <= ddpx::kMaxRendezvousTokenBytes, "token above 4096 bytes accepted");
      require(scan.header.token.data() >= received.data() &&
                  scan.header.token.data() + scan.header.token.size() <= received.data() + received.size(),
              "token outside the bytes given");
      require(scan.header.total_bytes == scan.need, "need differs from the hello's size");
      (void)ddpx::same_token(scan.header.token, "job-token");
      authenticated = true;
    } else {
      require(!authenticated && scan.need <= kMostBeforeAuthentication, "asked for more than the header first");
    }
    if (scan.stage == HelloScan::Stage::complete) {
      require(received.size() == scan.header.total_bytes, "complete with a different size");
      break;
    }
    require(scan.need > received.size(), "asked for nothing more without completing");
    if (offered == size) break;
    // Feed what it asked for, or less (a peer's bytes arrive in any pieces): the input's first byte picks a step.
    const size_t step = 1 + (data[0] % 7) * 64;
    const size_t take = std::min({scan.need - received.size(), size - offered, step});
    received.append(bytes + offered, take);
    offered += take;
  }
  return 0;
}
