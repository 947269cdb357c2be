// The checkpoint folder's names, created without following links (see checkpoint_folder.hpp).
//
// Note [Checkpoint folder]
// Outputs named by a flag (--save, --report) follow a symlink on purpose: the user made it (Note [Output file
// policy]). The names inside --checkpoint-dir are different: ddpx chooses them, and checkpoint-5.safetensors made a
// link to ~/.bashrc by someone who can write the folder (a shared 0777 scratch) would have had the checkpoint
// written over the training user's file. So nothing in the folder is opened by path: the folder is opened once,
// files are created under fresh names with O_EXCL | O_NOFOLLOW, and renameat() puts them in place, replacing a
// planted link rather than writing through it. A folder anybody can write is refused unless it is sticky and owned
// by the training user: there nobody else can rename or remove the names ddpx created.
#include "io/checkpoint_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "core/error.hpp"

namespace ddpx {
namespace {

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

void require_safe_mode(const struct stat& info, const std::filesystem::path& dir, std::string_view flag) {
  const bool others_write = (info.st_mode & S_IWOTH) != 0;
  const bool sticky_and_mine = (info.st_mode & S_ISVTX) != 0 && info.st_uid == ::geteuid();
  DDPX_REQUIRE(!others_write || sticky_and_mine,
               "{} {}: the folder is writable by every user (mode {}{}), so another user could plant a file or link "
               "under a checkpoint's name or replace a checkpoint; use a folder only you can write (chmod o-w {}), "
               "or a sticky one you own (chmod 1777, owned by you)",
               flag, dir.string(), octal_mode(info.st_mode),
               (info.st_mode & S_ISVTX) ? ", sticky but owned by another user" : "", dir.string());
}

// ".<checkpoint name>.<pid>[.<random>].tmp" or ".link" of a process that is no longer running (or of this one,
// which has none open at this point).
bool left_by_a_dead_process(const std::string& name) {
  if (!name.starts_with(".checkpoint") || !(name.ends_with(".tmp") || name.ends_with(".link"))) return false;
  const size_t after = name.find(".safetensors.");
  if (after == std::string::npos) return false;
  const size_t begin = after + std::string_view(".safetensors.").size();
  const size_t end = name.find('.', begin);
  const std::string digits = name.substr(begin, end - begin);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
    return false;
  const pid_t pid = static_cast<pid_t>(std::stol(digits));
  return pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH);
}

}  // namespace

void require_checkpoint_folder(const std::filesystem::path& dir, std::string_view flag) {
  struct stat info{};
  if (::stat(dir.c_str(), &info) != 0) return;  // created later, by ddpx
  DDPX_REQUIRE(S_ISDIR(info.st_mode), "{} {}: that is not a folder; give a folder path", flag, dir.string());
  require_safe_mode(info, dir, flag);
}

CheckpointFolder::CheckpointFolder(const std::filesystem::path& dir, std::string_view flag)
    : dir_(dir), flag_(flag) {
  std::error_code ignored;
  std::filesystem::create_directories(dir_, ignored);
  fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) {
    const int error = errno;
    fail("{} {}: cannot open the folder: {}", flag_, dir_.string(), std::strerror(error));
  }
  struct stat info{};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    fail("{} {}: cannot stat the folder: {}", flag_, dir_.string(), std::strerror(error));
  }
  try {
    require_safe_mode(info, dir_, flag_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
  for (const std::string& name : names())
    if (left_by_a_dead_process(name)) remove(name);
}

CheckpointFolder::~CheckpointFolder() {
  if (fd_ >= 0) ::close(fd_);
}

CheckpointFolder::NewFile CheckpointFolder::write_new(std::string_view final_name,
                                                     const std::function<void(OutputFile&)>& write) {
  std::string name;  // stays empty for an unnamed file
  int fd = ::openat(fd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) fd = create_fresh(final_name, ".tmp", name);
  NewFile file(*this, fd, name);
  OutputFile output(::dup(fd), dir_ / (name.empty() ? "." + std::string(final_name) + " (unnamed)" : name));
  write(output);
  output.sync();
  output.close();
  return file;
}

int CheckpointFolder::create_fresh(std::string_view final_name, std::string_view suffix, std::string& name) {
  std::random_device random;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) {
    name = "." + std::string(final_name) + "." + std::to_string(::getpid()) + "." + std::to_string(random()) +
           std::string(suffix);
    fd = ::openat(fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    const int error = errno;
    fail("{} {}: cannot create '{}': {}", flag_, dir_.string(), name, std::strerror(error));
  }
  return fd;
}

CheckpointFolder::NewFile::NewFile(NewFile&& other) noexcept
    : folder_(other.folder_), fd_(std::exchange(other.fd_, -1)), name_(std::move(other.name_)) {
  other.name_.clear();
}

CheckpointFolder::NewFile& CheckpointFolder::NewFile::operator=(NewFile&& other) noexcept {
  release();
  folder_ = other.folder_;
  fd_ = std::exchange(other.fd_, -1);
  name_ = std::exchange(other.name_, std::string());
  return *this;
}

CheckpointFolder::NewFile::~NewFile() { release(); }

void CheckpointFolder::NewFile::release() noexcept {
  if (!name_.empty() && folder_) folder_->remove(name_);
  name_.clear();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void CheckpointFolder::NewFile::place(const std::string& final_name) {
  DDPX_REQUIRE(fd_ >= 0, "{} {}: '{}' was already placed", folder_->flag_, folder_->dir_.string(), final_name);
  if (name_.empty()) {  // unnamed: give it a fresh name first (linkat never follows or replaces the new name)
    const std::string self = "/proc/self/fd/" + std::to_string(fd_);
    std::random_device random;
    for (int attempt = 0; name_.empty() && attempt < 16; ++attempt) {
      const std::string candidate =
          "." + final_name + "." + std::to_string(::getpid()) + "." + std::to_string(random()) + ".tmp";
      if (::linkat(AT_FDCWD, self.c_str(), folder_->fd_, candidate.c_str(), AT_SYMLINK_FOLLOW) == 0)
        name_ = candidate;
      else if (errno != EEXIST)
        break;
    }
    if (name_.empty()) {
      const int error = errno;
      fail("{} {}: cannot name the new '{}': {}", folder_->flag_, folder_->dir_.string(), final_name,
           std::strerror(error));
    }
  }
  folder_->rename(name_, final_name);
  name_.clear();
  ::close(fd_);
  fd_ = -1;
}

void CheckpointFolder::rename(const std::string& from, const std::string& to) {
  if (::renameat(fd_, from.c_str(), fd_, to.c_str()) != 0) {
    const int error = errno;
    fail("{} {}: cannot rename '{}' to '{}': {}", flag_, dir_.string(), from, to, std::strerror(error));
  }
  if (::fsync(fd_) != 0) {
    const int error = errno;
    fail("{} {}: fsync of the folder failed: {}", flag_, dir_.string(), std::strerror(error));
  }
}

void CheckpointFolder::link_or_copy(const std::string& from, const std::string& to) {
  const std::string link_name = "." + to + "." + std::to_string(::getpid()) + ".link";
  ::unlinkat(fd_, link_name.c_str(), 0);  // ours by name: left by a process of this pid that was killed
  if (::linkat(fd_, from.c_str(), fd_, link_name.c_str(), 0) == 0) {  // flags 0: a link is never followed
    try {
      rename(link_name, to);
    } catch (...) {
      remove(link_name);
      throw;
    }
    return;
  }
  // No hard links here: copy the bytes, read through a descriptor that refuses a link.
  const int source = ::openat(fd_, from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (source < 0) {
    const int error = errno;
    fail("{} {}: cannot open '{}': {}", flag_, dir_.string(), from, std::strerror(error));
  }
  try {
    NewFile copy = write_new(to, [&](OutputFile& file) {
      char buffer[1 << 16];
      for (;;) {
        const ssize_t got = ::read(source, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        DDPX_REQUIRE(got >= 0, "{} {}: reading '{}' failed: {}", flag_, dir_.string(), from, std::strerror(errno));
        if (got == 0) break;
        file.write(buffer, static_cast<size_t>(got));
      }
    });
    ::close(source);
    copy.place(to);
  } catch (...) {
    ::close(source);  // closing twice is harmless here: nothing else opened a descriptor in between
    throw;
  }
}

void CheckpointFolder::remove(const std::string& name) noexcept { ::unlinkat(fd_, name.c_str(), 0); }

std::vector<std::string> CheckpointFolder::names() const {
  std::vector<std::string> found;
  const int fd = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return found;
  DIR* listing = ::fdopendir(fd);
  if (!listing) {
    ::close(fd);
    return found;
  }
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") found.push_back(name);
  }
  ::closedir(listing);
  return found;
}

}  // namespace ddpx
