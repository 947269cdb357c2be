// Deadline-bounded socket waits; see socket_deadline.hpp.
#include "dist/socket_deadline.hpp"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace ddpx {

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  return left > 0 ? static_cast<int>(std::min<int64_t>(left, int64_t{1} << 30)) : 0;
}

int connect_within(int fd, const sockaddr* address, socklen_t length, std::chrono::steady_clock::time_point deadline) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int error = ::connect(fd, address, length) == 0 ? 0 : errno;
  if (error == EINPROGRESS) {
    pollfd waiter{fd, POLLOUT, 0};
    int ready = 0;
    do ready = ::poll(&waiter, 1, remaining_ms(deadline));
    while (ready < 0 && errno == EINTR);
    socklen_t size = sizeof error;
    if (ready <= 0) error = ready == 0 ? ETIMEDOUT : errno;
    else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
  }
  ::fcntl(fd, F_SETFL, flags);
  return error;
}

}  // namespace ddpx
