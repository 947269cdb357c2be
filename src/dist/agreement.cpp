// Agreement checks by digest all-gather; values exchanged only to write the error message.
#include "dist/agreement.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "dist/host_collectives.hpp"

namespace ddpx {
namespace {

constexpr size_t kQuotedBytes = 200;

uint64_t fnv1a(const std::string& value) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : value) hash = (hash ^ c) * 0x100000001b3ULL;
  return hash;
}

struct Digest {
  uint64_t hash;
  uint64_t length;
  bool operator==(const Digest&) const = default;
};

}  // namespace

void require_agreement(Communicator& comm, std::string_view what, const std::string& value) {
  const size_t world = static_cast<size_t>(comm.size());
  Digest mine{fnv1a(value), value.size()};
  std::vector<Digest> digests(world);
  all_gather_host(comm, &mine, digests.data(), sizeof(Digest));
  size_t differing = 0;
  for (size_t r = 1; r < world && !differing; ++r)
    if (!(digests[r] == digests[0])) differing = r;
  if (!differing) return;

  // Every rank saw the same digests, so every rank takes this path together.
  std::vector<char> quoted(kQuotedBytes + 1, '\0');
  std::string shown = value.size() > kQuotedBytes ? value.substr(0, kQuotedBytes - 3) + "..." : value;
  std::memcpy(quoted.data(), shown.data(), shown.size());
  std::vector<char> all(world * quoted.size());
  all_gather_host(comm, quoted.data(), all.data(), quoted.size());
  auto value_of = [&](size_t rank) { return std::string(all.data() + rank * quoted.size()); };
  fail("ranks disagree on {}: rank 0 has '{}', rank {} has '{}'", what, value_of(0), differing,
       value_of(differing));
}

void broadcast_parameters(Communicator& comm, float* params, size_t count, void* stream) {
  comm.broadcast(params, count, CommDType::f32, 0, stream);
}

}  // namespace ddpx
