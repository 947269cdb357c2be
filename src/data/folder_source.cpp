// ImageFolder's layout; see folder_source.hpp.
#include "data/folder_source.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <filesystem>
#include <utility>

#include "core/error.hpp"
#include "core/fnv1a.hpp"
#include "io/posix_file.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;

std::string lower_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool is_sample_name(const std::string& ext) { return ext == ".jpg" || ext == ".jpeg" || ext == ".png"; }
bool is_other_image_name(const std::string& ext) {
  return ext == ".bmp" || ext == ".ppm" || ext == ".pgm" || ext == ".tif" || ext == ".tiff" || ext == ".webp";
}

}  // namespace

SampleFormat detect_image_format(const uint8_t* data, size_t size, const std::string& name) {
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) return SampleFormat::jpeg;
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) return SampleFormat::png;
  fail("{}: not a JPEG or PNG image ({} bytes{}); replace or remove the file", name, size,
       size == 0 ? ", empty" : fmt::format(", starting {:02x} {:02x}", data[0], size > 1 ? data[1] : 0));
}

void read_whole_file(const std::string& path, std::vector<uint8_t>& bytes) {
  try {
    const InputFile file(path);  // never blocks: an image replaced by a FIFO mid-run is refused, naming it
    DDPX_REQUIRE(file.size() <= (uint64_t{1} << 30), "'{}' is larger than 1 GiB, not a training image", path);
    bytes.resize(static_cast<size_t>(file.size()));
    file.read_at(0, bytes.data(), bytes.size());
  } catch (const Error& e) {
    fail("{}; it was listed at start: restore it, or remove it and restart", e.what());
  }
}

FolderSource::FolderSource(const std::string& directory, DataOrigin origin) : directory_(directory) {
  const std::string where = fmt::format("{} folder:{}", origin_flag(origin), directory);  // as the user typed it
  std::error_code ec;
  DDPX_REQUIRE(fs::is_directory(directory, ec),
               "{}: not a directory; give a folder with one subfolder per class (ImageFolder's layout)",
               where);
  // Note [Each folder once]: ImageFolder walks with followlinks=True, so `a/loop -> .` multiplied a class's images
  // and `a/up -> ..` labelled class b's images as a, silently. ddpx reads every real folder (device, inode) once:
  // the root and the class folders are claimed first, and a folder reached a second time through a link is an
  // error naming the link and the folder it repeats.
  std::map<std::pair<uint64_t, uint64_t>, std::string> seen;  // real folder -> the path it was first reached by
  const auto claim = [&](const fs::path& folder) {
    struct stat info{};
    DDPX_REQUIRE(::stat(folder.c_str(), &info) == 0, "{}: cannot read {} ({})", where,
                 folder.string(), std::strerror(errno));
    const auto [at, fresh] = seen.emplace(std::pair<uint64_t, uint64_t>(info.st_dev, info.st_ino), folder.string());
    DDPX_REQUIRE(fresh, "{}: {} is a link to the folder {}, which is already read (a symlink loop, or "
                 "one folder in two places); ddpx reads each folder once, so that no image is counted twice or "
                 "under another class: remove the link", where, folder.string(), at->second);
    folders_.push_back(folder.string());
  };
  claim(directory);
  std::error_code kind;  // a dangling link is neither a folder nor a file: skipped, as ImageFolder skips it
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, ec))
    if (entry.is_directory(kind)) classes_.push_back(entry.path().filename().string());
  DDPX_REQUIRE(!ec, "{}: cannot list it ({})", where, ec.message());
  std::sort(classes_.begin(), classes_.end());
  DDPX_REQUIRE(!classes_.empty(),
               "{}: holds no class folders; put each class's images in a subfolder named after it "
               "(DIR/cat/1.jpg, DIR/dog/2.jpg), as torchvision's ImageFolder reads", where);
  for (const std::string& name : classes_) claim(fs::path(directory) / name);
  for (size_t c = 0; c < classes_.size(); ++c) {
    // ImageFolder: sorted(os.walk(class_dir, followlinks=True)), then sorted file names in each folder.
    std::vector<std::pair<std::string, std::string>> found;  // (folder, file name)
    const fs::path class_dir = fs::path(directory) / classes_[c];
    std::vector<fs::path> pending = {class_dir};
    while (!pending.empty()) {
      const fs::path folder = pending.back();
      pending.pop_back();
      for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
        if (entry.is_directory(kind)) {
          claim(entry.path());
          pending.push_back(entry.path());
          continue;
        }
        if (!entry.is_regular_file(kind)) continue;
        const std::string ext = lower_extension(entry.path());
        DDPX_REQUIRE(!is_other_image_name(ext),
                     "{}: {} images are not read by ddpx (JPEG and PNG are); convert it, e.g. with PIL: "
                     "Image.open(f).convert('RGB').save(f.rsplit('.', 1)[0] + '.png'), or move it out of the folder",
                     entry.path().string(), ext);
        if (!is_sample_name(ext)) continue;
        found.emplace_back(entry.path().parent_path().string(), entry.path().filename().string());
        if (entry.is_symlink(kind)) linked_files_.push_back(entry.path().string());  // may live outside the tree
      }
      DDPX_REQUIRE(!ec, "{}: cannot list {} ({})", where, folder.string(), ec.message());
    }
    DDPX_REQUIRE(!found.empty(),
                 "{}: the class folder {} holds no .jpg, .jpeg or .png file; add its images or remove "
                 "the folder (ImageFolder refuses it too)", where, class_dir.string());
    std::sort(found.begin(), found.end());
    for (const auto& [folder, name] : found) {
      files_.push_back((fs::path(folder) / name).string());
      labels_.push_back(static_cast<int32_t>(c));
    }
  }
}

uint64_t FolderSource::content_hash() const {
  uint64_t hash = kFnv1aOffset;
  for (const std::string& name : classes_) hash = fnv1a(name + "\n", hash);
  for (size_t i = 0; i < files_.size(); ++i)
    hash = fnv1a(fmt::format("{}\t{}\n", fs::path(files_[i]).lexically_relative(directory_).string(), labels_[i]), hash);
  return hash;
}

std::vector<FileRole> FolderSource::inputs() const {
  std::vector<FileRole> roles;
  const std::string flag = "the data folder:" + directory_;
  for (const std::string& folder : folders_) roles.push_back({flag, folder, FileRole::Kind::folder});
  for (const std::string& file : linked_files_) roles.push_back({flag, file});
  return roles;
}

std::string FolderSource::describe() const {
  return fmt::format("folder {} ({} images, {} classes)", directory_, files_.size(), classes_.size());
}

SampleBytes FolderSource::read(int64_t index, std::vector<uint8_t>& scratch) const {
  const std::string& path = files_[static_cast<size_t>(index)];
  read_whole_file(path, scratch);
  SampleBytes bytes;
  bytes.format = detect_image_format(scratch.data(), scratch.size(), path);
  bytes.data = scratch.data();
  bytes.size = scratch.size();
  return bytes;
}

}  // namespace ddpx
