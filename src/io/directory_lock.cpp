// Exclusive folder lock (see directory_lock.hpp for the guarantees).
#include "io/directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace ddpx {

DirectoryLock::DirectoryLock(const std::filesystem::path& dir, std::string_view flag) {
  const std::filesystem::path path = dir / ".ddpx.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) {
    const int e = errno;
    fail("{} {}: cannot open the lock file '{}' ({})", flag, dir.string(), path.string(), std::strerror(e));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    std::array<char, 32> holder{};
    const ssize_t got = ::pread(fd_, holder.data(), holder.size() - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (e == EWOULDBLOCK)
      fail("{} {}: another ddpx run (pid {}) is using this folder; two runs would overwrite each other's "
           "checkpoints: wait for it to finish or give this run its own {}",
           flag, dir.string(), got > 0 ? std::string(holder.data()) : std::string("unknown"), flag);
    fail("{} {}: cannot lock '{}' ({})", flag, dir.string(), path.string(), std::strerror(e));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, pid.data(), pid.size(), 0);
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays (removing it would race a waiting run)
}

}  // namespace ddpx
