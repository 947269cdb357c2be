// Thin POSIX file wrappers for tensor files: positioned reads, checked writes, fsync, and atomic replacement.
// Guarantees: every failing system call throws ddpx::Error naming the file and the OS reason; a short read is
// an error (never silently fewer bytes). InputFile is the one way ddpx opens a file it reads (data files, idx, packs,
// shards, images, metrics, traces, configs; scripts/check_includes.py fails CI on a reader of its READER_FOLDERS
// (src/data, src/io, src/report, src/analysis, ...) that calls open/fopen/ifstream itself): it is opened without
// blocking (O_NONBLOCK, cleared once the file is known to be regular) and must be a regular file, so a FIFO without a
// writer or a device (/dev/zero, /dev/urandom, a tape) or a folder is refused at once, naming the file, instead of
// hanging, reading without end or reading as empty. Its size is taken at open and re-checked when a read comes up
// short: a file that shrinks while it is read is an error naming the file and both sizes, never a crash (no mmap).
// replace_file_atomically() leaves either the old file or the complete new one at the target path, even if the process
// dies at any point (write temp, fsync, rename, fsync dir). Objects are single-owner (movable, not copyable) and not
// shared between threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace ddpx {

class InputFile {
 public:
  // Throws if the file cannot be opened or is not a regular file (FIFO, device, socket, directory). `what` prefixes
  // every error ("--data pack:x.pack"); empty: errors name the path alone.
  explicit InputFile(std::filesystem::path path, std::string what = {});
  ~InputFile();
  InputFile(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  InputFile& operator=(InputFile&&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Reads exactly n bytes at offset; throws naming the file when fewer are available (the range is checked with
  // core/byte_range.hpp against the size at open, and a short read re-checks the size: "shrank from A to B bytes").
  // Thread-safe (pread).
  void read_at(uint64_t offset, void* destination, size_t n) const;
  // The file's size now (fstat), to compare with size() when a reader suspects it changed.
  uint64_t current_size() const;

 private:
  [[noreturn]] void fail_here(const std::string& message) const;
  std::filesystem::path path_;
  std::string what_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

class OutputFile {
 public:
  enum class Mode {
    create_or_truncate,  // a regular file (created 0644, or truncated)
    existing_device,     // an existing character device written in place (/dev/null, a terminal): nothing created
  };
  explicit OutputFile(std::filesystem::path path, Mode mode = Mode::create_or_truncate);
  // An unnamed file (O_TMPFILE) in path's directory that appears at `path` only at link(): a process killed while
  // writing leaves nothing on disk. Where the filesystem has no O_TMPFILE, it is created at `path` at once.
  struct UnnamedUntilLinked {};
  OutputFile(std::filesystem::path path, UnnamedUntilLinked);
  // Takes ownership of a descriptor the caller opened for writing (io/checkpoint_folder.hpp: openat, O_EXCL).
  OutputFile(int fd, std::filesystem::path path);
  ~OutputFile();                                     // closes if close() was not called; errors there are lost
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_written_; }
  void write(const void* data, size_t n);
  void sync();   // fsync: the bytes written so far are on stable storage when it returns (no-op on a device)
  void close();  // reports a failing close (e.g. a deferred write error)
  void link();   // gives an unnamed file its path (replacing a stale file there); no-op for a named one

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool device_ = false;
  uint64_t bytes_written_ = 0;
  bool unnamed_ = false;
};

// The whole of a small regular file (configs): opened as InputFile (never blocks), at most max_bytes; `what`
// names it in errors ("--config best.cfg").
std::string read_small_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what);

// fsync on a directory, so that a rename inside it is durable.
void sync_directory(const std::filesystem::path& directory);

// Calls write(file) on `temporary`, fsyncs it, renames it over `target`, and fsyncs the directory. On any error
// the temporary is removed and the error rethrown; `target` is untouched. Both paths must be in one directory.
// The temporary is unnamed while it is written (O_TMPFILE where supported), so a process killed at any point
// leaves no temporary behind, except in the instant between naming it and the rename.
void replace_file_atomically(const std::filesystem::path& target, const std::filesystem::path& temporary,
                             const std::function<void(OutputFile&)>& write);

}  // namespace ddpx
