// Same-file detection (see same_file.hpp for the guarantees).
#include "io/same_file.hpp"

#include <sys/stat.h>

#include "core/error.hpp"

namespace ddpx {

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
    const std::optional<FileIdentity> output = file_identity(outputs[i].path);
    if (!output) continue;
    for (const FileRole& input : inputs) {
      const std::optional<FileIdentity> in = file_identity(input.path);
      DDPX_REQUIRE(!in || *in != *output,
                   "{} {} is the same file as {} {}: writing it would destroy that input; choose another path for "
                   "{}", outputs[i].flag, outputs[i].path.string(), input.flag, input.path.string(), outputs[i].flag);
    }
    for (size_t j = 0; j < i; ++j) {
      const std::optional<FileIdentity> other = file_identity(outputs[j].path);
      DDPX_REQUIRE(!other || *other != *output,
                   "{} {} and {} {} are the same file: one output would overwrite the other; give them different "
                   "paths", outputs[j].flag, outputs[j].path.string(), outputs[i].flag, outputs[i].path.string());
    }
  }
}

}  // namespace ddpx
