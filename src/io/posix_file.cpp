// POSIX file wrappers (see posix_file.hpp for the guarantees).
#include "io/posix_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/byte_range.hpp"
#include "core/error.hpp"
#include "core/test_fault.hpp"

namespace ddpx {

namespace {

[[noreturn]] void fail_errno(std::string_view what, const std::filesystem::path& path) {
  const int error = errno;
  fail("cannot {} '{}': {}", what, path.string(), std::strerror(error));
}

}  // namespace

InputFile::InputFile(std::filesystem::path path, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever; regular files ignore the flag.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    const int error = errno;
    fail_here(fmt::format("cannot open '{}': {}", path_.string(), std::strerror(error)));
  }
  struct stat info{};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    fail_here(fmt::format("cannot stat '{}': {}", path_.string(), std::strerror(error)));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    const char* kind = S_ISFIFO(info.st_mode) ? "a FIFO (named pipe)"
                       : S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) ? "a device"
                       : S_ISDIR(info.st_mode) ? "a folder"
                       : S_ISSOCK(info.st_mode) ? "a socket" : "not a regular file";
    fail_here(fmt::format("'{}' is {}; ddpx reads regular files only (copy the data to a file first)",
                          path_.string(), kind));
  }
  // A regular file: blocking reads from here on (the flag only mattered for the open itself).
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  size_ = static_cast<uint64_t>(info.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)), what_(std::move(other.what_)), fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
}

void InputFile::fail_here(const std::string& message) const {
  if (what_.empty()) fail("{}", message);
  fail("{}: {}", what_, message);
}

uint64_t InputFile::current_size() const {
  struct stat info{};
  if (::fstat(fd_, &info) != 0) return 0;
  return static_cast<uint64_t>(info.st_size);
}

void InputFile::read_at(uint64_t offset, void* destination, size_t n) const {
  if (!range_fits(offset, n, size_))
    fail_here(fmt::format("'{}' is truncated: reading {} bytes at offset {} goes past its {} bytes", path_.string(),
                          n, offset, size_));
  auto* out = static_cast<char*>(destination);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error = errno;
      fail_here(fmt::format("cannot read '{}': {}", path_.string(), std::strerror(error)));
    }
    if (got == 0)
      fail_here(fmt::format("'{}' shrank while being read: {} bytes when opened, {} now (no data at offset {}); "
                            "it was truncated or rewritten in place: restore it and restart", path_.string(), size_,
                            current_size(), offset));
    out += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
}

OutputFile::OutputFile(std::filesystem::path path, Mode mode)
    : path_(std::move(path)), device_(mode == Mode::existing_device) {
  if (device_) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) fail_errno("open", path_);
    struct stat info{};
    if (::fstat(fd_, &info) != 0 || !S_ISCHR(info.st_mode)) {
      ::close(fd_);
      fd_ = -1;
      fail("'{}' is no longer a character device; refusing to write it in place", path_.string());
    }
    return;
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_errno("create", path_);
}

OutputFile::OutputFile(std::filesystem::path path, UnnamedUntilLinked) : path_(std::move(path)) {
  const std::filesystem::path directory = path_.parent_path().empty() ? "." : path_.parent_path();
  fd_ = ::open(directory.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  unnamed_ = fd_ >= 0;
  if (fd_ < 0) fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_errno("create", path_);
}

OutputFile::OutputFile(int fd, std::filesystem::path path) : path_(std::move(path)), fd_(fd) {}

void OutputFile::link() {
  if (!unnamed_) return;
  DDPX_REQUIRE(fd_ >= 0, "'{}' is already closed", path_.string());
  const std::string self = "/proc/self/fd/" + std::to_string(fd_);
  ::unlink(path_.c_str());  // a temporary left by an older process that was killed in the same instant
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path_.c_str(), AT_SYMLINK_FOLLOW) != 0) fail_errno("link", path_);
  unnamed_ = false;
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write(const void* data, size_t n) {
  DDPX_REQUIRE(fd_ >= 0, "'{}' is already closed", path_.string());
  const auto* in = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::write(fd_, in, n);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) fail_errno("write", path_);
    in += put;
    n -= static_cast<size_t>(put);
    bytes_written_ += static_cast<uint64_t>(put);
  }
}

void OutputFile::sync() {
  DDPX_REQUIRE(fd_ >= 0, "'{}' is already closed", path_.string());
  if (device_) return;  // devices such as /dev/null refuse fsync (EINVAL) and have nothing to make durable
  if (::fsync(fd_) != 0) fail_errno("fsync", path_);
}

void OutputFile::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail_errno("close", path_);
}

std::string read_small_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what) {
  InputFile file(path, std::string(what));
  DDPX_REQUIRE(file.size() <= max_bytes, "{}: '{}' has {} bytes, more than the {} a file of this kind may have; "
               "check the path", what, path.string(), file.size(), max_bytes);
  std::string text(static_cast<size_t>(file.size()), '\0');
  file.read_at(0, text.data(), text.size());
  return text;
}

void sync_directory(const std::filesystem::path& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno("open directory", directory);
  const int result = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  errno = error;
  if (result != 0) fail_errno("fsync directory", directory);
}

void replace_file_atomically(const std::filesystem::path& target, const std::filesystem::path& temporary,
                             const std::function<void(OutputFile&)>& write) {
  DDPX_REQUIRE(target.parent_path() == temporary.parent_path(),
               "replace_file_atomically: '{}' and '{}' must be in one directory for rename to be atomic",
               target.string(), temporary.string());
  try {
    OutputFile file(temporary, OutputFile::UnnamedUntilLinked{});
    write(file);
    test_fault_point("write-" + target.filename().string());  // a test hook: see core/test_fault.hpp
    file.sync();
    file.link();
    file.close();
    if (::rename(temporary.c_str(), target.c_str()) != 0) {
      const int error = errno;
      fail("cannot rename '{}' to '{}': {}", temporary.string(), target.string(), std::strerror(error));
    }
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
  const std::filesystem::path directory = target.parent_path().empty() ? "." : target.parent_path();
  sync_directory(directory);
}

}  // namespace ddpx
