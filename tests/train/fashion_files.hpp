// Fashion-MNIST written as the other image sources hold it, for tests that compare sources on the same images: a
// torchvision ImageFolder (DIR/<label>/<index>.png, class folders named 0..9 so folder labels are idx's) and a
// WebDataset shard (KEY.png + KEY.cls), in the stored order or sorted by class (the worst case for a stream).
// The PNGs are lossless: every source decodes to idx's pixels.
#pragma once
#include <algorithm>
#include <filesystem>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "data/idx_source.hpp"
#include "image_files.hpp"  // tests/data

namespace ddpx::testing {

inline const char* const kFashionMnist = "/usr/share/datasets/fashion-mnist";

inline bool fashion_mnist_installed() {
  return std::filesystem::exists(std::filesystem::path(kFashionMnist) / "t10k-images-idx3-ubyte.gz");
}

// The first `count` images of the split (all when count is 0 or more than the split holds).
inline std::vector<int64_t> fashion_indices(const IdxSource& idx, int64_t count) {
  std::vector<int64_t> indices(static_cast<size_t>(count > 0 ? std::min(count, idx.size()) : idx.size()));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  return indices;
}

inline std::vector<uint8_t> fashion_png(const IdxSource& idx, int64_t i) {
  std::vector<uint8_t> scratch;
  const SampleBytes b = idx.read(i, scratch);
  return encode_png({std::vector<uint8_t>(b.data, b.data + b.size), b.height, b.width, b.channels});
}

inline void write_fashion_folder(const std::filesystem::path& dir, DataSplit split, int64_t count) {
  const IdxSource idx(kFashionMnist, split, DataOrigin::train_data);
  for (int c = 0; c < 10; ++c) std::filesystem::create_directories(dir / std::to_string(c));
  for (int64_t i : fashion_indices(idx, count))
    write_file((dir / std::to_string(idx.label(i)) / (std::to_string(100000 + i) + ".png")).string(),
               fashion_png(idx, i));
}

// One shard; class_sorted: all of class 0 first, then class 1, ... (stable within a class).
inline void write_fashion_shard(const std::filesystem::path& path, DataSplit split, int64_t count, bool class_sorted) {
  const IdxSource idx(kFashionMnist, split, DataOrigin::train_data);
  std::vector<int64_t> order = fashion_indices(idx, count);
  if (class_sorted)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return idx.label(a) < idx.label(b); });
  std::vector<std::pair<std::string, std::vector<uint8_t>>> members;
  for (int64_t i : order) {
    const std::string key = "sample" + std::to_string(100000 + i), label = std::to_string(idx.label(i)) + "\n";
    members.push_back({key + ".png", fashion_png(idx, i)});
    members.push_back({key + ".cls", std::vector<uint8_t>(label.begin(), label.end())});
  }
  write_file(path.string(), make_tar(members));
}

}  // namespace ddpx::testing
