// Where ddpx writes its outputs (--save, checkpoints, --report, --trace, eval --out, merged traces) and how: the
// one file policy every writer follows. See Note [Output file policy] in output_file.cpp for the reasons.
// Guarantees:
//  - A regular file, or a path that does not exist yet, is replaced atomically: the bytes go to a temporary file
//    in the same folder, which is fsynced and renamed over the target, and the folder is fsynced. A failure at any
//    point (a full disk, an exception from the writer, a crash) leaves the old file intact and no temporary.
//  - A symlink is followed: the file it points to is written under these rules and the link itself is never
//    replaced. A dangling link is refused.
//  - An existing character device (/dev/null, /dev/stdout on a terminal) is written in place, never replaced.
//  - A block device, a FIFO, a socket or a folder at the path is refused, naming the flag, before the run.
//  - check_output_path() runs these checks and also requires the folder to exist and be writable, so a bad path is
//    reported before hours of work, not after them.
#pragma once
#include <filesystem>
#include <functional>
#include <string_view>

#include "io/posix_file.hpp"

namespace ddpx {

struct OutputTarget {
  std::filesystem::path path;  // the file that will be written (a symlink resolved)
  bool in_place = false;       // a character device: written directly, never replaced
};

// Applies the policy above to `path`; errors name `flag` ("--save") and say what to do.
OutputTarget check_output_path(const std::filesystem::path& path, std::string_view flag);

// Writes an output under the policy: write(file) streams the content; see the guarantees above.
void write_output_file(const std::filesystem::path& path, std::string_view flag,
                       const std::function<void(OutputFile&)>& write);
void write_output_text(const std::filesystem::path& path, std::string_view flag, std::string_view text);

// Creates `dir` (and its parents) if needed and proves it writable by creating, fsyncing and removing a probe
// file (access(2) says yes to root on a read-only mount; a real write does not lie). Errors name `flag`.
void probe_output_directory(const std::filesystem::path& dir, std::string_view flag);

}  // namespace ddpx
