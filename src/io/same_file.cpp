// Same-file detection (see same_file.hpp for the guarantees).
#include "io/same_file.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using Inode = std::pair<uint64_t, uint64_t>;  // (device, inode)

std::optional<Inode> inode_of(const fs::path& path) {
  struct stat info{};
  if (path.empty() || ::stat(path.c_str(), &info) != 0) return std::nullopt;
  return Inode{static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
}

// The folders that hold `output` (symlinks resolved), innermost first: its real parent and every ancestor.
std::vector<Inode> folders_holding(const fs::path& output) {
  std::error_code error;
  const fs::path folder = fs::weakly_canonical(fs::absolute(output, error), error).parent_path();
  std::vector<Inode> chain;
  for (fs::path at = folder; !at.empty(); at = at.parent_path()) {
    if (const std::optional<Inode> inode = inode_of(at)) chain.push_back(*inode);
    if (at == at.root_path()) break;
  }
  return chain;
}

// Whether the tree under `folder` (symlinks followed, each real folder once) holds the file `target`.
bool tree_holds(const fs::path& folder, const Inode& target, std::set<Inode>& seen) {
  const std::optional<Inode> self = inode_of(folder);
  if (!self || !seen.insert(*self).second) return false;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    if (entry.is_directory(error)) {
      if (tree_holds(entry.path(), target, seen)) return true;
    } else if (inode_of(entry.path()) == target) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<FileIdentity> file_identity(const std::filesystem::path& path) {
  if (path.empty()) return std::nullopt;
  struct stat info{};
  if (::stat(path.c_str(), &info) == 0)
    return FileIdentity{static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino), ""};
  const std::filesystem::path folder = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  if (::stat(folder.c_str(), &info) != 0) return std::nullopt;
  return FileIdentity{static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino),
                      path.filename().string()};
}

void require_distinct_files(std::span<const FileRole> inputs, std::span<const FileRole> outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].path.empty()) continue;
    const std::optional<FileIdentity> output = file_identity(outputs[i].path);
    struct stat info{};
    const bool linked_elsewhere = ::stat(outputs[i].path.c_str(), &info) == 0 && info.st_nlink > 1;
    std::vector<Inode> holders;  // computed once, when a folder input asks; also for a path whose folder is new
    std::set<Inode> walked;      // folders already searched for a hard link of the output: each once in all
    for (const FileRole& input : inputs) {
      if (input.kind == FileRole::Kind::folder) {
        const std::optional<Inode> folder = inode_of(input.path);
        if (!folder) continue;
        if (holders.empty()) holders = folders_holding(outputs[i].path);
        bool inside = std::find(holders.begin(), holders.end(), *folder) != holders.end();
        // A hard link lives on its file's device: other devices' trees are never walked.
        if (!inside && linked_elsewhere && output && output->device == folder->first)
          inside = tree_holds(input.path, Inode{output->device, output->inode}, walked);
        DDPX_REQUIRE(!inside,
                     "{} {} is inside {} (the folder {} is read as data): writing it would change or destroy that "
                     "input; choose a path outside the data folder for {}", outputs[i].flag,
                     outputs[i].path.string(), input.flag, input.path.string(), outputs[i].flag);
        continue;
      }
      if (!output) continue;
      const std::optional<FileIdentity> in = file_identity(input.path);
      DDPX_REQUIRE(!in || *in != *output,
                   "{} {} is the same file as {} {}: writing it would destroy that input; choose another path for "
                   "{}", outputs[i].flag, outputs[i].path.string(), input.flag, input.path.string(), outputs[i].flag);
    }
    if (!output) continue;
    for (size_t j = 0; j < i; ++j) {
      const std::optional<FileIdentity> other = file_identity(outputs[j].path);
      DDPX_REQUIRE(!other || *other != *output,
                   "{} {} and {} {} are the same file: one output would overwrite the other; give them different "
                   "paths", outputs[j].flag, outputs[j].path.string(), outputs[i].flag, outputs[i].path.string());
    }
  }
}

}  // namespace ddpx
