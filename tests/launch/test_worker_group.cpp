// WorkerGroup directly: a worker's last words are relayed by the time it counts as reaped, even when they end
// without a newline and arrive in the same poll round as its exit (the race a multi-node verdict once lost).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "launch/worker_group.hpp"

namespace ddpx {
namespace {

struct NullFd {
  int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  ~NullFd() { ::close(fd); }
};

// Drives poll_once without waiting until the first failure is known (bounded: 10 s).
void poll_until_failure(WorkerGroup& group) {
  std::vector<pollfd> none;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!group.first_failure() && std::chrono::steady_clock::now() < deadline) group.poll_once(none, 0);
}

TEST(WorkerGroup, LastStderrLineIsKnownWhenTheFailureIs) {
  NullFd sink;
  WorkerGroup group("/bin/sh", {"sh", "-c", "echo an earlier line >&2; printf 'last words' >&2; exit 3"},
                    {{0, {"PATH=/usr/bin:/bin"}}}, sink.fd, sink.fd, std::chrono::milliseconds(500));
  // Let the worker write and exit before the first poll round, so its output and its exit are seen together.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  poll_until_failure(group);
  ASSERT_TRUE(group.first_failure().has_value());
  EXPECT_EQ(group.first_failure()->rank, 0);
  EXPECT_EQ(group.last_stderr_line(0), "last words");
}

TEST(WorkerGroup, LastStderrLineOfAWorkerThatWroteNothingIsEmpty) {
  NullFd sink;
  WorkerGroup group("/bin/sh", {"sh", "-c", "echo only stdout; exit 5"}, {{7, {"PATH=/usr/bin:/bin"}}}, sink.fd,
                    sink.fd, std::chrono::milliseconds(500));
  poll_until_failure(group);
  ASSERT_TRUE(group.first_failure().has_value());
  EXPECT_EQ(group.first_failure()->rank, 7);
  EXPECT_EQ(group.last_stderr_line(7), "");
}

}  // namespace
}  // namespace ddpx
