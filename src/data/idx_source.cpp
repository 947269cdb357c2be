// idx files, plain or gzipped; see idx_source.hpp.
#include "data/idx_source.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/fnv1a.hpp"

namespace ddpx {
namespace {

// DIR/NAME or DIR/NAME.gz, whichever exists (the plain file first).
std::string find_idx_file(const std::string& directory, const std::string& name) {
  const std::filesystem::path plain = std::filesystem::path(directory) / name;
  std::error_code ec;
  if (std::filesystem::is_regular_file(plain, ec)) return plain.string();
  const std::filesystem::path gz = std::filesystem::path(directory) / (name + ".gz");
  if (std::filesystem::is_regular_file(gz, ec)) return gz.string();
  fail("--data idx:{}: neither {} nor {} is a file; give the directory holding the idx files (Debian's "
       "dataset-fashion-mnist installs Fashion-MNIST in /usr/share/datasets/fashion-mnist)",
       directory, plain.string(), gz.string());
}

// The whole file, gunzipped when it is gzip (zlib reads plain files unchanged).
std::vector<uint8_t> read_maybe_gzipped(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  DDPX_REQUIRE(file != nullptr, "--data idx: cannot open {}; check its permissions", path);
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> chunk(1 << 20);
  for (;;) {
    const int got = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (got < 0) {
      int code = 0;
      const std::string message = gzerror(file, &code);
      gzclose(file);
      fail("--data idx: {} is damaged ({}); download or reinstall it", path, message);
    }
    if (got == 0) break;
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + got);
    DDPX_REQUIRE(bytes.size() <= (size_t{1} << 34), "--data idx: {} unpacks to more than 16 GiB; not an idx file",
                 path);
  }
  gzclose(file);
  return bytes;
}

// Note [Fashion-MNIST's class names]
// idx files carry no class names. Fashion-MNIST's label files are recognized by their bytes (FNV-1a 64 of the
// gunzipped train-labels and t10k-labels files, as zalandoresearch publishes them and Debian's
// dataset-fashion-mnist installs them), and get torchvision's FashionMNIST.classes; any other idx data (MNIST, a
// subset, a relabelled copy) names no classes, so a name is never attached to labels it does not belong to.
constexpr uint64_t kFashionTrainLabels = 0xc57b481e807c6a9aULL, kFashionTestLabels = 0xf87419dba64360a3ULL;
const std::vector<std::string>& fashion_mnist_classes() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

uint32_t big_endian(const std::vector<uint8_t>& bytes, size_t offset) {
  return (uint32_t{bytes[offset]} << 24) | (uint32_t{bytes[offset + 1]} << 16) | (uint32_t{bytes[offset + 2]} << 8) |
         uint32_t{bytes[offset + 3]};
}

}  // namespace

IdxSource::IdxSource(const std::string& directory, DataSplit split) {
  const std::string prefix = split == DataSplit::test ? "t10k" : "train";
  images_path_ = find_idx_file(directory, prefix + "-images-idx3-ubyte");
  labels_path_ = find_idx_file(directory, prefix + "-labels-idx1-ubyte");
  std::vector<uint8_t> images = read_maybe_gzipped(images_path_);
  std::vector<uint8_t> labels = read_maybe_gzipped(labels_path_);
  DDPX_REQUIRE(images.size() >= 16 && big_endian(images, 0) == 0x803,
               "--data idx: {} is not an idx image file (magic 0x00000803 expected, the file has {} bytes{}); "
               "give the train-images/t10k-images file of MNIST or Fashion-MNIST",
               images_path_, images.size(), images.size() >= 4 ? fmt::format(", magic {:#010x}", big_endian(images, 0)) : "");
  DDPX_REQUIRE(labels.size() >= 8 && big_endian(labels, 0) == 0x801,
               "--data idx: {} is not an idx label file (magic 0x00000801 expected); give the matching labels file",
               labels_path_);
  count_ = big_endian(images, 4);
  height_ = static_cast<int>(big_endian(images, 8));
  width_ = static_cast<int>(big_endian(images, 12));
  DDPX_REQUIRE(count_ > 0 && height_ > 0 && width_ > 0 && height_ <= 65536 && width_ <= 65536,
               "--data idx: {} says {} images of {} x {}; the file is damaged", images_path_, count_, height_, width_);
  const size_t expected = 16 + static_cast<size_t>(count_) * static_cast<size_t>(height_) * static_cast<size_t>(width_);
  DDPX_REQUIRE(images.size() == expected,
               "--data idx: {} has {} bytes, its header ({} images of {} x {}) needs {}: the file is truncated or "
               "damaged; download or reinstall it", images_path_, images.size(), count_, height_, width_, expected);
  DDPX_REQUIRE(big_endian(labels, 4) == count_ && labels.size() == 8 + static_cast<size_t>(count_),
               "--data idx: {} holds {} labels ({} bytes) for the {} images of {}; the two files do not belong "
               "together or one is truncated", labels_path_, big_endian(labels, 4), labels.size(), count_,
               images_path_);
  const uint64_t labels_hash = fnv1a(labels.data(), labels.size());
  if (labels_hash == kFashionTrainLabels || labels_hash == kFashionTestLabels) class_names_ = fashion_mnist_classes();
  pixels_.assign(images.begin() + 16, images.end());
  labels_.resize(static_cast<size_t>(count_));
  for (size_t i = 0; i < labels_.size(); ++i) {
    labels_[i] = labels[8 + i];
    classes_ = std::max<int64_t>(classes_, labels_[i] + 1);
  }
}

std::string IdxSource::describe() const {
  return fmt::format("idx {} ({} images {}x{}, {} classes{})", images_path_, count_, height_, width_, classes_,
                     class_names_.empty() ? "" : ", Fashion-MNIST's");
}

std::string IdxSource::sample_name(int64_t index) const { return fmt::format("{} image {}", images_path_, index); }

SampleBytes IdxSource::read(int64_t index, std::vector<uint8_t>&) const {
  const size_t numel = static_cast<size_t>(height_) * static_cast<size_t>(width_);
  return {SampleFormat::raw, pixels_.data() + static_cast<size_t>(index) * numel, numel, height_, width_, 1};
}

}  // namespace ddpx
