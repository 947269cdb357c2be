// The TCP rendezvous's hello (peer -> rank 0), read in two steps so that rank 0 authenticates a peer before it reads
// anything the peer chose the size of. See tcp_rendezvous.hpp for the whole wire format.
// Guarantees: scan_hello() looks only at the bytes given and never asks for more than
// kHelloPrefixBytes + kMaxRendezvousTokenBytes + 4 bytes before it returns `authenticate` (magic, exchange, rank,
// world size, token, payload length: the most an unauthenticated peer can make rank 0 read); the payload's length
// is then known, and at most kMaxRendezvousPayloadBytes. It never throws; garbage is `malformed`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace ddpx {

inline constexpr char kRendezvousMagic[8] = {'D', 'D', 'P', 'X', 'R', 'D', 'V', '2'};
inline constexpr size_t kHelloPrefixBytes = sizeof kRendezvousMagic + 4 * sizeof(uint32_t);  // up to the token
inline constexpr uint32_t kMaxRendezvousTokenBytes = 4096;
inline constexpr uint32_t kMaxRendezvousPayloadBytes = 1 << 20;

struct HelloHeader {
  uint32_t exchange = 0, rank = 0, world = 0;
  std::string_view token;         // a view into the bytes given to scan_hello()
  uint32_t payload_length = 0;
  size_t total_bytes = 0;         // the whole hello: header, token, payload
};

struct HelloScan {
  enum class Stage {
    need_more,     // read until `need` bytes in all have arrived
    authenticate,  // the header is complete: check the token and fields, then read up to header.total_bytes
    complete,      // all header.total_bytes are there; the payload is the last payload_length bytes
    malformed,     // not a ddpx hello (wrong magic, token or payload too long): drop the connection
  };
  Stage stage = Stage::need_more;
  size_t need = kHelloPrefixBytes;
  HelloHeader header;
};

HelloScan scan_hello(std::span<const char> received);

// Compares a presented token with the job's in time that depends only on their lengths.
bool same_token(std::string_view presented, std::string_view expected);

}  // namespace ddpx
