// idx files, plain or gzipped; see idx_source.hpp.
#include "data/idx_source.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>

#include "core/byte_range.hpp"
#include "core/error.hpp"
#include "core/fnv1a.hpp"
#include "io/posix_file.hpp"

namespace ddpx {
namespace {

// DIR/NAME or DIR/NAME.gz, whichever exists (the plain file first).
std::string find_idx_file(std::string_view flag, const std::string& directory, const std::string& name) {
  const std::filesystem::path plain = std::filesystem::path(directory) / name;
  std::error_code ec;
  // Whatever is there is opened as an InputFile, which refuses a FIFO, a device or a folder by name.
  if (std::filesystem::exists(plain, ec)) return plain.string();
  const std::filesystem::path gz = std::filesystem::path(directory) / (name + ".gz");
  if (std::filesystem::exists(gz, ec)) return gz.string();
  fail("{} idx:{}: neither {} nor {} is a file; give the directory holding the idx files (Debian's "
       "dataset-fashion-mnist installs Fashion-MNIST in /usr/share/datasets/fashion-mnist)", flag,
       directory, plain.string(), gz.string());
}

// Note [Bounded gunzip]
// An idx file's header says how many bytes follow it (images: 16 + N x H x W; labels: 8 + N), so the file is
// inflated only up to that size plus one byte (which proves "more than the header says"): a small gzip file that
// claims one image and inflates to gigabytes is refused after inflating a few hundred bytes. Before inflating, the
// header's size is compared with what deflate can produce from the file (at most 1032 bytes per input byte), so a
// short file claiming gigabytes is refused without allocating them. The memory used is at most the header's size
// (itself at most 16 GiB) and 1032 x the file's size, whichever is smaller.
constexpr uint64_t kMaxIdxBytes = uint64_t{1} << 34;
constexpr uint64_t kDeflateMaxRatio = 1032;

bool is_gzip(const std::vector<uint8_t>& bytes) { return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b; }

// Inflates gzip members from `in` into `out` until `out` holds `limit` bytes or the input ends; returns false when
// the data is damaged (message in `error`).
bool gunzip_prefix(const std::vector<uint8_t>& in, uint64_t limit, std::vector<uint8_t>& out, std::string& error) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    error = "zlib cannot start";
    return false;
  }
  size_t consumed = 0;
  std::vector<uint8_t> chunk(1 << 20);
  bool ok = true;
  while (out.size() < limit && consumed < in.size()) {
    stream.next_in = const_cast<Bytef*>(in.data() + consumed);
    stream.avail_in = static_cast<uInt>(std::min<size_t>(in.size() - consumed, 1u << 30));
    const uint64_t want = std::min<uint64_t>(chunk.size(), limit - out.size());
    stream.next_out = chunk.data();
    stream.avail_out = static_cast<uInt>(want);
    const uInt before_in = stream.avail_in;
    const int status = inflate(&stream, Z_NO_FLUSH);
    consumed += before_in - stream.avail_in;
    out.insert(out.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(want - stream.avail_out));
    if (status == Z_STREAM_END) {
      // Another gzip member may follow (gzip -c a b > c); trailing zero padding ends the data.
      while (consumed < in.size() && in[consumed] == 0) ++consumed;
      if (consumed < in.size() && inflateReset(&stream) != Z_OK) ok = false;
      if (!ok) break;
      continue;
    }
    if (status != Z_OK && status != Z_BUF_ERROR) {
      error = stream.msg != nullptr ? stream.msg : "inflate failed";
      ok = false;
      break;
    }
    if (status == Z_BUF_ERROR && before_in == stream.avail_in && want == stream.avail_out) {
      error = "the compressed data ends early";
      ok = false;
      break;
    }
  }
  inflateEnd(&stream);
  return ok;
}

// The idx file's bytes: read whole when plain; when gzipped, inflated only as far as the header that its first
// `header_bytes` declare says (+1 byte), see Note [Bounded gunzip]. `declared_size` reads that size from the header
// bytes (nullopt when the header is not one of this kind: the caller reports it).
std::vector<uint8_t> read_idx_file(std::string_view flag, const std::string& path, size_t header_bytes,
                                   const std::function<std::optional<uint64_t>(const std::vector<uint8_t>&)>& declared_size) {
  const InputFile file(path, fmt::format("{} idx", flag));
  DDPX_REQUIRE(file.size() <= kMaxIdxBytes, "{} idx: {} has {} bytes, more than an idx file of at most 16 GiB; "
               "check the path", flag, path, file.size());
  std::vector<uint8_t> raw(static_cast<size_t>(file.size()));
  file.read_at(0, raw.data(), raw.size());
  if (!is_gzip(raw)) return raw;
  std::vector<uint8_t> bytes;
  std::string error;
  const auto damaged = [&] { fail("{} idx: {} is damaged ({}); download or reinstall it", flag, path, error); };
  if (!gunzip_prefix(raw, header_bytes, bytes, error)) damaged();
  if (bytes.size() < header_bytes) return bytes;  // too short for a header: the caller says so
  const std::optional<uint64_t> size = declared_size(bytes);
  if (!size) return bytes;
  DDPX_REQUIRE(*size <= kMaxIdxBytes && *size <= kDeflateMaxRatio * raw.size() + 1024,
               "{} idx: {}: its header says the file holds {} bytes, which {} bytes of gzip cannot hold (or more "
               "than 16 GiB); the file is damaged or not an idx file: download or reinstall it", flag, path, *size,
               raw.size());
  bytes.clear();
  if (!gunzip_prefix(raw, *size + 1, bytes, error)) damaged();
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

IdxSource::IdxSource(const std::string& directory, DataSplit split, DataOrigin origin) {
  const std::string_view flag = origin_flag(origin);
  const std::string prefix = split == DataSplit::test ? "t10k" : "train";
  images_path_ = find_idx_file(flag, directory, prefix + "-images-idx3-ubyte");
  labels_path_ = find_idx_file(flag, directory, prefix + "-labels-idx1-ubyte");
  // Each file's own header bounds how much of it is inflated (Note [Bounded gunzip]).
  std::vector<uint8_t> images = read_idx_file(flag, images_path_, 16, [](const std::vector<uint8_t>& header) {
    if (big_endian(header, 0) != 0x803) return std::optional<uint64_t>();
    std::optional<uint64_t> pixels = checked_mul(big_endian(header, 4), big_endian(header, 8));
    if (pixels) pixels = checked_mul(*pixels, big_endian(header, 12));
    if (pixels) pixels = checked_add(*pixels, 16);
    return pixels ? pixels : std::optional<uint64_t>(kMaxIdxBytes + 1);
  });
  std::vector<uint8_t> labels = read_idx_file(flag, labels_path_, 8, [](const std::vector<uint8_t>& header) {
    return big_endian(header, 0) == 0x801 ? std::optional<uint64_t>(8 + uint64_t{big_endian(header, 4)})
                                          : std::nullopt;
  });
  DDPX_REQUIRE(images.size() >= 16 && big_endian(images, 0) == 0x803,
               "{} idx: {} is not an idx image file (magic 0x00000803 expected, the file has {} bytes{}); "
               "give the train-images/t10k-images file of MNIST or Fashion-MNIST", flag,
               images_path_, images.size(), images.size() >= 4 ? fmt::format(", magic {:#010x}", big_endian(images, 0)) : "");
  DDPX_REQUIRE(labels.size() >= 8 && big_endian(labels, 0) == 0x801,
               "{} idx: {} is not an idx label file (magic 0x00000801 expected); give the matching labels file", flag,
               labels_path_);
  count_ = big_endian(images, 4);
  height_ = static_cast<int>(big_endian(images, 8));
  width_ = static_cast<int>(big_endian(images, 12));
  DDPX_REQUIRE(count_ > 0 && height_ > 0 && width_ > 0 && height_ <= 65536 && width_ <= 65536,
               "{} idx: {} says {} images of {} x {}; the file is damaged", flag, images_path_, count_, height_, width_);
  // No overflow: count < 2^32 and height, width <= 2^16.
  const uint64_t expected = 16 + static_cast<uint64_t>(count_) * static_cast<uint64_t>(height_) * static_cast<uint64_t>(width_);
  DDPX_REQUIRE(images.size() <= expected,
               "{} idx: {} holds more bytes than its header ({} images of {} x {}) says ({}): the file is damaged "
               "or not an idx file; download or reinstall it", flag, images_path_, count_, height_, width_, expected);
  DDPX_REQUIRE(images.size() == expected,
               "{} idx: {} has {} bytes, its header ({} images of {} x {}) needs {}: the file is truncated or "
               "damaged; download or reinstall it", flag, images_path_, images.size(), count_, height_, width_, expected);
  DDPX_REQUIRE(big_endian(labels, 4) == count_ && labels.size() == 8 + static_cast<uint64_t>(count_),
               "{} idx: {} holds {} labels ({} bytes) for the {} images of {}; the two files do not belong "
               "together or one is truncated", flag, labels_path_, big_endian(labels, 4), labels.size(), count_,
               images_path_);
  const uint64_t labels_hash = fnv1a(labels.data(), labels.size());
  content_hash_ = fnv1a(images.data(), images.size(), labels_hash);
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
