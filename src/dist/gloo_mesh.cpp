// Gloo mesh: the pairs' addresses serialized into one payload, exchanged once, then connected context by context.
#include "dist/gloo_mesh.hpp"

#include <gloo/context.h>
#include <gloo/transport/context.h>
#include <gloo/transport/device.h>
#include <gloo/transport/tcp/address.h>

#include <cstring>
#include <exception>

#include "core/error.hpp"

namespace ddpx {
namespace {

// u32 format, then per context, per rank: u32 length and the bytes of the pair's address (empty for oneself).
constexpr uint32_t kAddressFormat = 2;

void append_bytes(std::vector<uint8_t>& out, const void* data, size_t length) {
  const auto* raw = static_cast<const uint8_t*>(data);
  out.insert(out.end(), raw, raw + length);
}

// A Gloo context whose transport context (and so its pairs) the caller sets up; gloo::Context keeps both protected.
class MeshContext : public gloo::Context {
 public:
  MeshContext(int rank, int size) : gloo::Context(rank, size) {}
  void adopt(const std::shared_ptr<gloo::transport::Device>& device,
             std::shared_ptr<gloo::transport::Context> transport) {
    device_ = device;
    transportContext_ = std::move(transport);
  }
};

// The address that rank `peer` published, in context `which`, for this rank's pair.
std::vector<char> address_for(const std::vector<uint8_t>& theirs, int rank, int size, int peer, int which) {
  auto unreadable = [&] {
    fail("gloo backend, rank {}: rank {}'s addresses ({} bytes) are not in the form this build reads (do all ranks "
         "run the same ddpx, with the same world size?)", rank, peer, theirs.size());
  };
  uint32_t format = 0;
  if (theirs.size() < sizeof format) unreadable();
  std::memcpy(&format, theirs.data(), sizeof format);
  if (format != kAddressFormat) unreadable();
  size_t at = sizeof format;
  for (int entry = 0; entry <= which * size + rank; ++entry) {
    uint32_t length = 0;
    if (theirs.size() - at < sizeof length) unreadable();
    std::memcpy(&length, theirs.data() + at, sizeof length);
    at += sizeof length;
    if (theirs.size() - at < length) unreadable();
    if (entry == which * size + rank) {
      if (length == 0) unreadable();
      return std::vector<char>(theirs.begin() + static_cast<ptrdiff_t>(at),
                               theirs.begin() + static_cast<ptrdiff_t>(at + length));
    }
    at += length;
  }
  unreadable();
  return {};
}

}  // namespace

std::vector<std::shared_ptr<gloo::Context>> connect_gloo_meshes(int rank, int size, int count,
                                                                const std::shared_ptr<gloo::transport::Device>& device,
                                                                std::chrono::milliseconds timeout,
                                                                const BytesAllGather& exchange) {
  std::vector<std::shared_ptr<gloo::transport::Context>> transports;
  std::vector<uint8_t> mine;
  append_bytes(mine, &kAddressFormat, sizeof kAddressFormat);
  for (int which = 0; which < count; ++which) {
    auto transport = device->createContext(rank, size);
    transport->setTimeout(timeout);
    for (int peer = 0; peer < size; ++peer) {
      std::vector<char> bytes;
      if (peer != rank) bytes = transport->createPair(peer)->address().bytes();
      const uint32_t length = static_cast<uint32_t>(bytes.size());
      append_bytes(mine, &length, sizeof length);
      append_bytes(mine, bytes.data(), bytes.size());
    }
    transports.push_back(std::move(transport));
  }

  const std::vector<std::vector<uint8_t>> all = exchange(mine);
  DDPX_REQUIRE(all.size() == static_cast<size_t>(size), "gloo backend, rank {}: the address exchange returned {} "
               "payloads for {} ranks", rank, all.size(), size);
  std::vector<std::shared_ptr<gloo::Context>> contexts;
  for (int which = 0; which < count; ++which) {
    for (int peer = 0; peer < size; ++peer) {  // the same order on every rank, as connectFullMesh does
      if (peer == rank) continue;
      const std::vector<char> address = address_for(all[static_cast<size_t>(peer)], rank, size, peer, which);
      try {
        transports[static_cast<size_t>(which)]->getPair(peer)->connect(address);
      } catch (const std::exception& e) {
        fail("gloo backend, rank {}: cannot connect to rank {} at {}: {}", rank, peer,
             gloo::transport::tcp::Address(address).str(), e.what());
      }
    }
    auto context = std::make_shared<MeshContext>(rank, size);
    context->setTimeout(timeout);
    context->adopt(device, std::move(transports[static_cast<size_t>(which)]));
    contexts.push_back(std::move(context));
  }
  return contexts;
}

}  // namespace ddpx
