// Fuzz target: the multi-node launchers' control-channel messages (launch/node_messages.hpp), each line as node 0 or
// a joining node reads it. For any bytes: no crash or exception, and every accepted message has the fields its
// parser promises (ranges, nonce and proof lengths), so nothing a peer sends can index past a table or turn a
// failure into exit status 0.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "launch/node_messages.hpp"

namespace {

void require(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "ddpx fuzz: node messages: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ddpx::node_job;
  const std::string text(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (start <= text.size()) {  // one message per line, as LineConnection hands them over
    const size_t newline = text.find('\n', start);
    const std::string line = text.substr(start, newline == std::string::npos ? std::string::npos : newline - start);
    if (const auto challenge = parse_challenge(line)) require(challenge->size() == 32, "challenge nonce length");
    if (const auto join = parse_join(line)) {
      require(join->nnodes >= 1 && join->nnodes <= kMaxNodes, "JOIN nnodes out of range");
      require(join->nproc >= 1 && join->nproc <= kMaxProcsPerNode, "JOIN nproc out of range");
      require(join->nonce.size() == 32 && join->proof.size() == 64, "JOIN nonce or proof length");
      require(!join_proof_holds("secret", std::string(32, '0'), *join) ||
                  *join->proof.begin() != 'z',  // evaluated for coverage; a forged proof is vanishingly unlikely
              "unreachable");
    }
    if (const auto started = parse_start(line))
      require(started->job_nonce.size() == 32 && started->proof.size() == 64, "START nonce or proof length");
    if (const auto fail = parse_fail(line))
      require(fail->priority >= 0 && fail->priority <= 2 && fail->exit_code >= 1 && fail->exit_code <= 255,
              "FAIL priority or status out of range");
    if (const auto abort = parse_abort(line))
      require(abort->exit_code >= 1 && abort->exit_code <= 255, "ABORT status out of range");
    (void)parse_refuse(line);
    if (newline == std::string::npos) break;
    start = newline + 1;
  }
  return 0;
}
