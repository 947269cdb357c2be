// ImageFolder's layout; see folder_source.hpp.
#include "data/folder_source.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.hpp"

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
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  DDPX_REQUIRE(fd >= 0, "{}: cannot open it ({}); it was listed at start: restore it, or remove it and restart", path,
               std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (int64_t{1} << 30)) {
    const bool big = st.st_size > (int64_t{1} << 30);
    ::close(fd);
    fail("{}: {}; replace or remove it", path, big ? "larger than 1 GiB, not a training image" : "not a regular file");
  }
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int error = errno;
      ::close(fd);
      fail("{}: read failed after {} of {} bytes ({}); check the disk, or remove the file and restart", path, done,
           bytes.size(), got == 0 ? "the file shrank" : std::strerror(error));
    }
    done += static_cast<size_t>(got);
  }
  ::close(fd);
}

FolderSource::FolderSource(const std::string& directory) : directory_(directory) {
  std::error_code ec;
  DDPX_REQUIRE(fs::is_directory(directory, ec),
               "--data folder:{}: not a directory; give a folder with one subfolder per class (ImageFolder's layout)",
               directory);
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, fs::directory_options::follow_directory_symlink, ec))
    if (entry.is_directory(ec)) classes_.push_back(entry.path().filename().string());
  DDPX_REQUIRE(!ec, "--data folder:{}: cannot list it ({})", directory, ec.message());
  std::sort(classes_.begin(), classes_.end());
  DDPX_REQUIRE(!classes_.empty(),
               "--data folder:{}: holds no class folders; put each class's images in a subfolder named after it "
               "(DIR/cat/1.jpg, DIR/dog/2.jpg), as torchvision's ImageFolder reads", directory);
  for (size_t c = 0; c < classes_.size(); ++c) {
    // ImageFolder: sorted(os.walk(class_dir, followlinks=True)), then sorted file names in each folder.
    std::vector<std::pair<std::string, std::string>> found;  // (folder, file name)
    const fs::path class_dir = fs::path(directory) / classes_[c];
    for (auto it = fs::recursive_directory_iterator(class_dir, fs::directory_options::follow_directory_symlink, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      const std::string ext = lower_extension(it->path());
      DDPX_REQUIRE(!is_other_image_name(ext),
                   "{}: {} images are not read by ddpx (JPEG and PNG are); convert it, e.g. with PIL: "
                   "Image.open(f).convert('RGB').save(f.rsplit('.', 1)[0] + '.png'), or move it out of the folder",
                   it->path().string(), ext);
      if (is_sample_name(ext)) found.emplace_back(it->path().parent_path().string(), it->path().filename().string());
    }
    DDPX_REQUIRE(!ec, "--data folder:{}: cannot list {} ({})", directory, class_dir.string(), ec.message());
    DDPX_REQUIRE(!found.empty(),
                 "--data folder:{}: the class folder {} holds no .jpg, .jpeg or .png file; add its images or remove "
                 "the folder (ImageFolder refuses it too)", directory, class_dir.string());
    std::sort(found.begin(), found.end());
    for (const auto& [folder, name] : found) {
      files_.push_back((fs::path(folder) / name).string());
      labels_.push_back(static_cast<int32_t>(c));
    }
  }
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
