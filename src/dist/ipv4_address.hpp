// IPv4 socket addresses from text: where the launchers' sockets parse an address and fill a sockaddr_in.
// Guarantees: parse_ipv4 accepts dotted-quad text only (inet_pton; no host names, no IPv6) and says so with an
// empty optional, leaving the error message to the caller, who knows the flag at fault; ipv4_socket_address
// gives an AF_INET address with the port in network byte order (port 0: the kernel's choice at bind()).
#pragma once
#include <netinet/in.h>

#include <optional>
#include <string>

namespace ddpx {

std::optional<in_addr> parse_ipv4(const std::string& text);
sockaddr_in ipv4_socket_address(const in_addr& address, int port);

}  // namespace ddpx
