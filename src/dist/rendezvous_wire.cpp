// The rendezvous hello's two-step scan (see rendezvous_wire.hpp).
#include "dist/rendezvous_wire.hpp"

#include <cstring>

namespace ddpx {
namespace {

uint32_t u32_at(std::span<const char> bytes, size_t offset) {
  uint32_t value = 0;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

}  // namespace

HelloScan scan_hello(std::span<const char> received) {
  HelloScan scan;
  if (received.size() >= sizeof kRendezvousMagic &&
      std::memcmp(received.data(), kRendezvousMagic, sizeof kRendezvousMagic) != 0) {
    scan.stage = HelloScan::Stage::malformed;
    return scan;
  }
  if (received.size() < kHelloPrefixBytes) return scan;
  const uint32_t token_length = u32_at(received, kHelloPrefixBytes - 4);
  if (token_length > kMaxRendezvousTokenBytes) {
    scan.stage = HelloScan::Stage::malformed;
    return scan;
  }
  const size_t header_bytes = kHelloPrefixBytes + token_length + sizeof(uint32_t);
  if (received.size() < header_bytes) {
    scan.need = header_bytes;
    return scan;
  }
  HelloHeader& header = scan.header;
  header.exchange = u32_at(received, 8);
  header.rank = u32_at(received, 12);
  header.world = u32_at(received, 16);
  header.token = std::string_view(received.data() + kHelloPrefixBytes, token_length);
  header.payload_length = u32_at(received, header_bytes - 4);
  if (header.payload_length > kMaxRendezvousPayloadBytes) {
    scan.stage = HelloScan::Stage::malformed;
    return scan;
  }
  header.total_bytes = header_bytes + header.payload_length;
  scan.need = header.total_bytes;
  scan.stage = received.size() >= header.total_bytes ? HelloScan::Stage::complete : HelloScan::Stage::authenticate;
  return scan;
}

bool same_token(std::string_view presented, std::string_view expected) {
  if (presented.size() != expected.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < presented.size(); ++i) difference |= static_cast<unsigned char>(presented[i] ^ expected[i]);
  return difference == 0;
}

}  // namespace ddpx
