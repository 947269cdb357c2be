// parse_ipv4 and ipv4_socket_address; see ipv4_address.hpp.
#include "dist/ipv4_address.hpp"

#include <arpa/inet.h>

#include <cstdint>

namespace ddpx {

std::optional<in_addr> parse_ipv4(const std::string& text) {
  in_addr parsed{};
  if (::inet_pton(AF_INET, text.c_str(), &parsed) != 1) return std::nullopt;
  return parsed;
}

sockaddr_in ipv4_socket_address(const in_addr& address, int port) {
  sockaddr_in socket_address{};
  socket_address.sin_family = AF_INET;
  socket_address.sin_addr = address;
  socket_address.sin_port = htons(static_cast<uint16_t>(port));
  return socket_address;
}

}  // namespace ddpx
