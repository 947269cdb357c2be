// Refusing outputs that would destroy inputs or each other: `--save x.npy` onto `--images x.npy`, `--report`
// onto the `--load` file, `--trace` and `--report` on one path.
// Guarantees: two paths are "the same file" when they name one inode (stat's device and inode, so symlinks, hard
// links, `./a` and `dir/../a` all match), or, for a path that does not exist yet, when they have the same folder
// (by inode) and the same name. require_distinct_files() throws ddpx::Error naming both flags and both paths for
// the first clash: an output that is an input, or two outputs that are one file. Empty paths are skipped.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace ddpx {

struct FileRole {
  std::string flag;  // "--save", "--images", "--checkpoint-dir (checkpoint file)"
  std::filesystem::path path;
};

// What identifies the file a path names (nullopt when neither it nor its folder exists).
struct FileIdentity {
  uint64_t device = 0, inode = 0;
  std::string name_in_folder;  // empty when the path exists (device/inode are its own)
  bool operator==(const FileIdentity&) const = default;
};
std::optional<FileIdentity> file_identity(const std::filesystem::path& path);

void require_distinct_files(std::span<const FileRole> inputs, std::span<const FileRole> outputs);

}  // namespace ddpx
