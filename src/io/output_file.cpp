// The output file policy (see output_file.hpp for the guarantees).
//
// Note [Output file policy]
// Writing through a temporary and rename() is what makes an output atomic, but rename() replaces whatever name
// it lands on: `--save /dev/null` run as root turned the system's /dev/null into a regular file, and a symlink
// became a file while the file it pointed to kept the old weights. So the kind of the existing target decides:
// regular files (and new paths) are replaced atomically; symlinks are resolved first, so the file a user linked
// is the one updated; character devices have no contents to protect and are written in place (/dev/null
// discards, a terminal shows); block devices (a disk), FIFOs (a write would wait for a reader without limit) and
// sockets are refused, because writing them is never what an output flag means.
#include "io/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;

fs::path folder_of(const fs::path& path) { return path.parent_path().empty() ? fs::path(".") : path.parent_path(); }

std::string kind_of(const struct stat& info) {
  if (S_ISBLK(info.st_mode)) return "a block device";
  if (S_ISFIFO(info.st_mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(info.st_mode)) return "a socket";
  if (S_ISDIR(info.st_mode)) return "a folder";
  return "not a regular file";
}

}  // namespace

OutputTarget check_output_path(const fs::path& path, std::string_view flag) {
  DDPX_REQUIRE(!path.empty(), "{}: the path is empty; give a file name", flag);
  OutputTarget target{path, false};
  struct stat link_info{};
  if (::lstat(path.c_str(), &link_info) == 0 && S_ISLNK(link_info.st_mode)) {
    std::error_code error;
    const fs::path resolved = fs::canonical(path, error);
    DDPX_REQUIRE(!error, "{} {}: it is a symlink to '{}', which does not exist (or a link in the chain is broken); "
                 "ddpx writes the file a link points to and never replaces the link: fix the link or choose "
                 "another path", flag, path.string(), fs::read_symlink(path, error).string());
    target.path = resolved;
  }
  struct stat info{};
  if (::stat(target.path.c_str(), &info) == 0) {
    if (S_ISCHR(info.st_mode)) {
      target.in_place = true;  // /dev/null, a terminal: written as it is, never replaced
      return target;
    }
    DDPX_REQUIRE(!S_ISDIR(info.st_mode), "{} {}: that is a folder; give a file name", flag, path.string());
    DDPX_REQUIRE(S_ISREG(info.st_mode),
                 "{} {}: the path is {}; ddpx replaces regular files only (it writes character devices such as "
                 "/dev/null in place and refuses block devices, FIFOs and sockets): choose a file path",
                 flag, path.string(), kind_of(info));
  }
  const fs::path folder = folder_of(target.path);
  DDPX_REQUIRE(fs::is_directory(folder) && ::access(folder.c_str(), W_OK) == 0,
               "{} {}: the folder '{}' does not exist or is not writable; create it or choose another path", flag,
               path.string(), folder.string());
  return target;
}

void write_output_file(const fs::path& path, std::string_view flag, const std::function<void(OutputFile&)>& write) {
  const OutputTarget target = check_output_path(path, flag);
  if (target.in_place) {
    OutputFile file(target.path, OutputFile::Mode::existing_device);
    write(file);
    file.close();
    return;
  }
  // The pid keeps two processes that write the same name (a mistake, but possible) off each other's temporary.
  const fs::path temporary =
      folder_of(target.path) / ("." + target.path.filename().string() + "." + std::to_string(::getpid()) + ".tmp");
  replace_file_atomically(folder_of(target.path) / target.path.filename(), temporary, write);
}

void write_output_text(const fs::path& path, std::string_view flag, std::string_view text) {
  write_output_file(path, flag, [&](OutputFile& file) { file.write(text.data(), text.size()); });
}

void probe_output_directory(const fs::path& dir, std::string_view flag) {
  DDPX_REQUIRE(!dir.empty(), "{}: the path is empty; give a folder", flag);
  std::error_code error;
  fs::create_directories(dir, error);
  DDPX_REQUIRE(fs::is_directory(dir), "{} {}: cannot create this folder ({}); choose a path under a writable folder",
               flag, dir.string(), error ? error.message() : "a file of that name is in the way");
  const fs::path probe = dir / (".ddpx-probe." + std::to_string(::getpid()));
  ::unlink(probe.c_str());  // ours by name: one left by a crashed process of the same pid
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    fail("{} {}: cannot create a file in this folder ({}); choose a writable folder", flag, dir.string(),
         std::strerror(e));
  }
  const char byte = 0;
  const bool written = ::write(fd, &byte, 1) == 1 && ::fsync(fd) == 0;
  const int e = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  DDPX_REQUIRE(written, "{} {}: writing a file in this folder failed ({}); free space or choose another folder", flag,
               dir.string(), std::strerror(e));
}

}  // namespace ddpx
