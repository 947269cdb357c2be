// Errors name what the user typed (data/data_origin.hpp): every way each image source (idx, folder, pack, wds) can
// refuse its files, opened for --val, `ddpx pack SOURCE`, `ddpx eval --data`, `ddpx data-preview SOURCE` and
// `ddpx data-bench SOURCE`, names that flag, and none but --data's (and eval's --data) says --data. The class of
// errors is closed where it starts: the origin travels in the spec into every source's constructor.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/data_origin.hpp"
#include "data/data_sources.hpp"
#include "data/data_spec.hpp"
#include "image_files.hpp"
#include "support/scratch_dir.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

std::vector<uint8_t> tiny_png() { return testing::encode_png({std::vector<uint8_t>(4 * 4 * 3, 128), 4, 4, 3}); }

// One way a source refuses its data: the spec's text (after setting up `dir`) and a part of the message that shows
// the refusal is the one meant (not an earlier one).
struct BadData {
  std::string name;
  std::function<std::string(const fs::path& dir)> make;  // writes the files, returns the spec text
  std::string expected;
};

std::vector<BadData> bad_data() {
  return {
      {"idx: no files", [](const fs::path& dir) { return "idx:" + dir.string(); }, "neither"},
      {"idx: a bad magic",
       [](const fs::path& dir) {
         std::vector<uint8_t> images, labels;
         for (uint32_t v : {0x999u, 1u, 2u, 2u}) put_u32(images, v);
         images.resize(images.size() + 4);
         put_u32(labels, 0x801);
         put_u32(labels, 1);
         labels.push_back(0);
         testing::write_file((dir / "train-images-idx3-ubyte").string(), images);
         testing::write_file((dir / "train-labels-idx1-ubyte").string(), labels);
         return "idx:" + dir.string();
       },
       "is not an idx image file"},
      {"folder: not a directory", [](const fs::path& dir) { return "folder:" + (dir / "nope").string(); },
       "not a directory"},
      {"folder: no class folders", [](const fs::path& dir) { return "folder:" + dir.string(); }, "no class folders"},
      {"folder: an empty class",
       [](const fs::path& dir) {
         fs::create_directories(dir / "cat");
         testing::write_file((dir / "cat" / "1.png").string(), tiny_png());
         fs::create_directories(dir / "dog");
         return "folder:" + dir.string();
       },
       "holds no .jpg"},
      {"pack: no file", [](const fs::path& dir) { return "pack:" + (dir / "nope.pack").string(); }, "nope.pack"},
      {"pack: not a pack",
       [](const fs::path& dir) {
         testing::write_file((dir / "x.pack").string(), std::vector<uint8_t>(200, 7));
         return "pack:" + (dir / "x.pack").string();
       },
       "no DDPXPACK magic"},
      {"pack: no trailer",
       [](const fs::path& dir) {
         std::vector<uint8_t> bytes = bytes_of("DDPXPACK");
         bytes.insert(bytes.end(), {1, 0, 0, 0, 0, 0, 0, 0});
         bytes.resize(300, 0);
         testing::write_file((dir / "cut.pack").string(), bytes);
         return "pack:" + (dir / "cut.pack").string();
       },
       "no pack trailer"},
      {"wds: a bad range", [](const fs::path& dir) { return "wds:" + (dir / "s-{5..2}.tar").string(); },
       "FIRST <= LAST"},
      {"wds: a missing shard",
       [](const fs::path& dir) {
         testing::write_file((dir / "s-0.tar").string(),
                             testing::make_tar({{"a.png", tiny_png()}, {"a.cls", bytes_of("0")}}));
         return "wds:" + (dir / "s-{0..1}.tar").string();
       },
       "braces expand to 2 shards"},
      {"wds: a sample without its label",
       [](const fs::path& dir) {
         testing::write_file((dir / "s-0.tar").string(), testing::make_tar({{"a.png", tiny_png()}}));
         return "wds:" + (dir / "s-0.tar").string();
       },
       "has no a.cls member"},
      {"wds: classes.txt too short",
       [](const fs::path& dir) {
         testing::write_file((dir / "s-0.tar").string(),
                             testing::make_tar({{"a.png", tiny_png()}, {"a.cls", bytes_of("2")}}));
         testing::write_file((dir / "classes.txt").string(), bytes_of("cat\n"));
         return "wds:" + (dir / "s-0.tar").string();
       },
       "classes.txt names 1 classes"},
  };
}

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(DataOrigin, EverySourcesErrorsNameTheFlagTheUserTyped) {
  const std::vector<DataOrigin> origins = {DataOrigin::train_data,  DataOrigin::train_val,      DataOrigin::eval_data,
                                           DataOrigin::pack_source, DataOrigin::preview_source, DataOrigin::bench_source};
  for (const BadData& bad : bad_data()) {
    for (const DataOrigin origin : origins) {
      const testing::ScratchDir scratch("ddpx-data-origin");
      const std::string text = bad.make(scratch.path());
      const std::string kind = text.substr(0, text.find(':'));
      const std::string error = error_of([&] { (void)open_data(parse_data_spec(text, origin)); });
      const std::string flag(origin_flag(origin));
      SCOPED_TRACE(bad.name + " as " + flag + ": " + error);
      ASSERT_FALSE(error.empty()) << "no error";
      EXPECT_NE(error.find(bad.expected), std::string::npos);
      EXPECT_EQ(error.rfind(flag + " " + kind, 0), 0u) << "the message starts with the flag and the source";
      if (origin != DataOrigin::train_data && origin != DataOrigin::eval_data)
        EXPECT_EQ(error.find("--data"), std::string::npos) << "another flag's name";
    }
  }
}

// The parser's own refusals and a spec that names no image source where one is needed say the flag too.
TEST(DataOrigin, TheParserAndTheRegistryNameTheFlag) {
  EXPECT_NE(error_of([] { (void)parse_data_spec("imagenet", DataOrigin::pack_source); })
                .find("ddpx pack SOURCE 'imagenet' is not a known data source"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)open_sample_source(parse_data_spec("learnable", DataOrigin::preview_source)); })
                .find("ddpx data-preview SOURCE learnable: not an image source"),
            std::string::npos);
  // The spec keeps its origin; equality is about the data it names, not the flag.
  const DataSpec val = parse_data_spec("idx:/d:test", DataOrigin::train_val);
  EXPECT_EQ(val.origin, DataOrigin::train_val);
  EXPECT_EQ(val.as_typed(), "--val idx:/d:test");
  EXPECT_EQ(val, parse_data_spec("idx:/d:test", DataOrigin::train_data));
}

// Opened data carries what a command reads of it, and its datasets wrap the one opened source: making datasets
// from it opens nothing again (Note [Data opened once]).
TEST(DataOrigin, OpenedDataIsOpenedOnceAndItsDatasetsOpenNothing) {
  const testing::ScratchDir scratch("ddpx-data-opened");
  for (const char* name : {"cat", "dog"}) {
    fs::create_directories(scratch.path() / name);
    for (int i = 0; i < 3; ++i)
      testing::write_file((scratch.path() / name / (std::to_string(i) + ".png")).string(), tiny_png());
  }
  const DataSpec spec = parse_data_spec("folder:" + scratch.path().string(), DataOrigin::bench_source);
  const int64_t before = data_opens(DataOrigin::bench_source);
  const OpenedData data = open_data(spec);
  EXPECT_EQ(data_opens(DataOrigin::bench_source), before + 1);
  EXPECT_EQ(data.size, 6);
  EXPECT_EQ(data.num_classes, 2);
  EXPECT_EQ(data.class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(data.fingerprint, data_fingerprint(*data.samples));
  ASSERT_FALSE(data.inputs.empty());
  EXPECT_EQ(data.inputs.front().flag, "ddpx data-bench SOURCE folder:" + scratch.path().string());
  DatasetContext context{.shape = DataShape{3, 4, 2}};
  const std::unique_ptr<Dataset> train = make_dataset(data, context);
  context.training = false;
  const std::unique_ptr<Dataset> eval = make_dataset(data, context);
  EXPECT_EQ(data_opens(DataOrigin::bench_source), before + 1);
  EXPECT_EQ(train->batches_per_epoch(1, 2), 3);
  EXPECT_EQ(eval->class_names(), data.class_names);
}

}  // namespace
}  // namespace ddpx
