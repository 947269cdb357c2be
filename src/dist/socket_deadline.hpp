// Socket waits that end at a deadline, shared by ddpx's TCP rendezvous and the torchrun store client.
// Guarantees: remaining_ms() is the time left in milliseconds, clamped to [0, 2^30] (a valid poll() timeout);
// connect_within() gives up at the deadline (a blocking connect() to an address that drops SYNs, such as a
// firewall or a wrong MASTER_ADDR, waits for the kernel's retries, about two minutes) and returns 0 or an errno
// value, leaving the socket blocking as it was.
#pragma once
#include <sys/socket.h>

#include <chrono>

namespace ddpx {

int remaining_ms(std::chrono::steady_clock::time_point deadline);

int connect_within(int fd, const sockaddr* address, socklen_t length, std::chrono::steady_clock::time_point deadline);

}  // namespace ddpx
