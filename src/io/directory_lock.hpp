// One run per checkpoint folder: an exclusive flock(2) on <dir>/.ddpx.lock, held for the life of the object.
// Guarantees: a second DirectoryLock on the same folder (from any process on any host sharing a file system with
// working flock) throws ddpx::Error at once, naming the folder, the flag and the pid that holds it (written into
// the lock file), instead of two runs overwriting each other's checkpoints. The kernel drops the lock when the
// holder exits, however it exits (kill -9 included), so a stale lock file never blocks a later run.
#pragma once
#include <filesystem>
#include <string_view>

namespace ddpx {

class DirectoryLock {
 public:
  DirectoryLock(const std::filesystem::path& dir, std::string_view flag);  // dir must exist
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace ddpx
