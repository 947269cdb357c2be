// The structure-aware sweep of the data formats (tests/fuzz/structured_files.hpp), in the normal suite: every header
// field of a pack, a WebDataset shard and an idx pair set to every boundary value (0, 1, max, 2^63, 2^64 - small,
// offsets into the header and past the end), alone and in pairs of the pack's offset fields, with every checksum
// recomputed. Each file is opened and every sample read: a ddpx::Error naming the file is fine, reading is fine;
// a crash (the pack entry at 2^64 - 8 crashed in crc32 before core/byte_range.hpp), a hang, or another exception
// fails. The fuzz targets fuzz_pack, fuzz_wds and fuzz_idx explore the same edits in combination.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "core/error.hpp"
#include "data/idx_source.hpp"
#include "data/pack_source.hpp"
#include "data/wds_source.hpp"
#include "fuzz/structured_files.hpp"
#include "image_files.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using fuzz::Edit;

struct Folder {
  fs::path dir = fs::temp_directory_path() / ("ddpx_structured_" + std::to_string(::getpid()));
  Folder() { fs::create_directories(dir); }
  ~Folder() { fs::remove_all(dir); }
};

// Opens and reads everything; returns "" when accepted, the error otherwise. Anything but ddpx::Error fails.
template <typename Open>
std::string outcome(const std::string& what, Open&& open) {
  try {
    open();
    return "";
  } catch (const Error& e) {
    EXPECT_FALSE(std::string(e.what()).empty()) << what;
    return e.what();
  }
}

void read_all(const SampleSource& source) {
  std::vector<uint8_t> scratch;
  for (int64_t i = 0; i < source.size(); ++i) {
    const SampleBytes bytes = source.read(i, scratch);
    ASSERT_LE(source.label(i), source.num_classes());
    (void)bytes;
  }
}

TEST(StructuredSweep, EveryPackFieldAtEveryBoundaryIsReadOrRefusedNamingTheFile) {
  const Folder folder;
  const std::string path = (folder.dir / "p.pack").string();
  const std::vector<uint8_t> seed = fuzz::seed_pack();
  const std::vector<fuzz::Field> fields = fuzz::pack_fields(seed);
  testing::write_file(path, seed);
  ASSERT_EQ(outcome("seed", [&] { read_all(PackSource(path, DataOrigin::train_data)); }), "");
  int refused = 0, files = 0;
  const auto run = [&](const std::vector<Edit>& edits, const std::string& what) {
    std::vector<uint8_t> bytes = seed;
    fuzz::edit_pack(bytes, fields, edits);
    testing::write_file(path, bytes);
    const std::string error = outcome(what, [&] { read_all(PackSource(path, DataOrigin::train_data)); });
    ++files;
    if (!error.empty()) {
      ++refused;
      EXPECT_NE(error.find(path), std::string::npos) << what << ": " << error;
    }
  };
  for (size_t f = 0; f < fields.size(); ++f)
    for (uint64_t value : fuzz::boundary_values(fields[f].width, seed.size()))
      run({{f, value}}, fields[f].name + " = " + std::to_string(value));
  // The offsets and sizes that bound each other, in pairs (the trailer's, and entry 0's offset with its size).
  std::vector<size_t> bounds;
  for (size_t f = 0; f < fields.size(); ++f)
    for (const char* name : {"trailer.records", "trailer.index_offset", "trailer.classes_offset",
                             "trailer.classes_size", "entry[0].offset", "entry[0].size"})
      if (fields[f].name == name) bounds.push_back(f);
  for (size_t a : bounds)
    for (size_t b : bounds)
      if (a < b)
        for (uint64_t va : fuzz::boundary_values(fields[a].width, seed.size()))
          for (uint64_t vb : {uint64_t{0}, uint64_t{24}, uint64_t(seed.size()), ~uint64_t{0} - 7, uint64_t{1} << 63})
            run({{a, va}, {b, vb}}, fields[a].name + ", " + fields[b].name);
  EXPECT_GT(refused, files / 2) << "most boundary values must be refused";
}

TEST(StructuredSweep, EveryTarHeaderSizeAndTypeAtEveryBoundaryIsReadOrRefusedNamingTheShard) {
  const Folder folder;
  const std::string path = (folder.dir / "s.tar").string();
  const std::vector<uint8_t> seed = fuzz::seed_tar();
  const std::vector<fuzz::Field> fields = fuzz::tar_fields(seed);
  ASSERT_EQ(fields.size(), 8u);
  testing::write_file(path, seed);
  ASSERT_EQ(outcome("seed", [&] { EXPECT_EQ(WdsSource(path, DataOrigin::train_data).size(), 2); }), "");
  for (size_t f = 0; f < fields.size(); ++f) {
    std::vector<uint64_t> values = fuzz::boundary_values(fields[f].width, seed.size());
    if (fields[f].width == 1) values = {0, '0', '1', '5', 'x', 'L', 'g', 0xff};
    for (uint64_t value : values) {
      std::vector<uint8_t> bytes = seed;
      fuzz::edit_tar(bytes, fields, {{f, value}});
      testing::write_file(path, bytes);
      const std::string error = outcome(fields[f].name, [&] {
        const WdsSource wds(path, DataOrigin::train_data);
        std::vector<uint8_t> scratch;
        for (int64_t i = 0; i < wds.size(); ++i) wds.read(i, scratch);
      });
      if (!error.empty()) EXPECT_NE(error.find(path), std::string::npos) << fields[f].name << ": " << error;
    }
  }
}

TEST(StructuredSweep, EveryIdxHeaderFieldAtEveryBoundaryIsReadOrRefusedQuickly) {
  const Folder folder;
  const std::vector<uint8_t> images = fuzz::seed_idx_images(), labels = fuzz::seed_idx_labels();
  const std::vector<fuzz::Field> image_fields = fuzz::idx_image_fields(), label_fields = fuzz::idx_label_fields();
  for (const bool gzip : {false, true}) {
    const auto write = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
      fs::remove(folder.dir / name);
      fs::remove(folder.dir / (name + ".gz"));
      if (!gzip) return testing::write_file((folder.dir / name).string(), bytes);
      gzFile f = gzopen((folder.dir / (name + ".gz")).c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    };
    const auto check = [&](const std::vector<uint8_t>& im, const std::vector<uint8_t>& lb, const std::string& what) {
      write("train-images-idx3-ubyte", im);
      write("train-labels-idx1-ubyte", lb);
      const auto start = std::chrono::steady_clock::now();
      const std::string error = outcome(what, [&] { read_all(IdxSource(folder.dir.string(), DataSplit::train, DataOrigin::train_data)); });
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << what;
      if (!error.empty()) EXPECT_NE(error.find("idx"), std::string::npos) << what << ": " << error;
    };
    check(images, labels, "seed");
    for (size_t f = 0; f < image_fields.size(); ++f)
      for (uint64_t value : fuzz::boundary_values(4, images.size())) {
        std::vector<uint8_t> bytes = images;
        fuzz::edit_fields(bytes, image_fields, {{f, value}});
        check(bytes, labels, image_fields[f].name + " = " + std::to_string(value));
      }
    for (size_t f = 0; f < label_fields.size(); ++f)
      for (uint64_t value : fuzz::boundary_values(4, labels.size())) {
        std::vector<uint8_t> bytes = labels;
        fuzz::edit_fields(bytes, label_fields, {{f, value}});
        check(images, bytes, label_fields[f].name + " = " + std::to_string(value));
      }
  }
}

}  // namespace
}  // namespace ddpx
