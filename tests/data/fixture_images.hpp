// The torchvision fixtures' images for the augmentation tests (tools/make_rand_augment_fixtures.py and
// tools/make_auto_augment_fixtures.py write them the same way): a fixture file parsed, its "images" (flattened HWC
// uint8 with their shapes), base64 outputs decoded, and op names mapped to AugmentOp; and loaded_pixels() and
// loaded_floats(), the loader's uint8 or float batches of a dataset, which the augmentations' loader tests compare
// across worker counts.
#pragma once
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "data/augment_ops.hpp"
#include "data/batch_loader.hpp"
#include "data/dataset.hpp"

namespace ddpx::testing {

inline nlohmann::json read_fixture(const std::string& name) {
  std::ifstream in(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/" + name);
  return nlohmann::json::parse(in);
}

inline std::vector<uint8_t> base64(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::vector<uint8_t> out;
  int bits = 0, buffer = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) break;  // '=' padding
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((buffer >> bits) & 0xff));
    }
  }
  return out;
}

struct FixtureImage {
  std::vector<uint8_t> pixels;  // HWC
  int height = 0, width = 0, channels = 0;
};

inline std::vector<FixtureImage> fixture_images(const nlohmann::json& all) {
  std::vector<FixtureImage> images;
  for (const nlohmann::json& image : all["images"])
    images.push_back({image["pixels"].get<std::vector<uint8_t>>(), image["shape"][0].get<int>(),
                      image["shape"][1].get<int>(), image["shape"][2].get<int>()});
  return images;
}

inline AugmentOp op_named(const std::string& name) {
  for (int k = 0; k < kAugmentOps; ++k)
    if (name == augment_op_name(static_cast<AugmentOp>(k))) return static_cast<AugmentOp>(k);
  ADD_FAILURE() << "unknown op " << name;
  return AugmentOp::identity;
}

// The first `steps` batches of `batch` images (rank 0 of 1) that `workers` loader threads produce, back to back: the
// loader's uint8 pixel batches (T = uint8_t, [batch, H, W, C]) or its float images after Normalize (T = float,
// [batch, C, H, W]).
template <typename T>
std::vector<T> loaded_batches(const Dataset& dataset, int workers, int64_t steps, int64_t batch) {
  static_assert(std::is_same_v<T, uint8_t> || std::is_same_v<T, float>);
  BatchLoader::Options options;
  options.workers = workers;
  options.pixel_batches = std::is_same_v<T, uint8_t>;
  BatchLoader loader(dataset, 0, 1, batch, 0, options);
  std::vector<T> all;
  for (int64_t s = 0; s < steps; ++s) {
    const HostBatch& b = loader.acquire();
    const T* first;
    if constexpr (std::is_same_v<T, uint8_t>)
      first = b.pixels;
    else
      first = b.images;
    all.insert(all.end(), first, first + batch * dataset.shape().image_numel());
    loader.release(b);
  }
  return all;
}

inline std::vector<uint8_t> loaded_pixels(const Dataset& dataset, int workers, int64_t steps, int64_t batch) {
  return loaded_batches<uint8_t>(dataset, workers, steps, batch);
}

inline std::vector<float> loaded_floats(const Dataset& dataset, int workers, int64_t steps, int64_t batch) {
  return loaded_batches<float>(dataset, workers, steps, batch);
}

}  // namespace ddpx::testing
