// Refusing outputs that would destroy inputs or each other: `--save x.npy` onto `--images x.npy`, `--report`
// onto the `--load` file, `--trace` and `--report` on one path, `ddpx pack idx:D D/train-images-idx3-ubyte`,
// `ddpx pack folder:D D/c0/0.png`, `ddpx pack pack:j.pack j.pack`. The one check every command that writes a file
// calls (train, eval, report, predict, topo, pack and data-bench through data/pack_writer).
// Guarantees:
//  - Two paths are "the same file" when they name one inode (stat's device and inode, so symlinks, hard links,
//    `./a` and `dir/../a` all match), or, for a path that does not exist yet, when they have the same folder (by
//    inode) and the same name.
//  - An input of kind `folder` stands for its whole tree (a data folder: every file under it is an input, and a
//    new file inside it would become one, e.g. a .png in a class folder). An output is refused when the folder
//    that holds it (symlinks resolved) is that folder or under it; and, when the output exists with several hard
//    links, when it is any file of that tree (walked, each real folder once).
//  - require_distinct_files() throws ddpx::Error naming both flags and both paths for the first clash: an output
//    that is an input or inside an input folder, or two outputs that are one file. Empty paths are skipped.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace ddpx {

struct FileRole {
  enum class Kind { file, folder };
  std::string flag;  // "--save", "--images", "--checkpoint-dir (checkpoint file)", "SOURCE folder:D"
  std::filesystem::path path;
  Kind kind = Kind::file;
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
