// wds: WebDataset shards written here from Fashion-MNIST (PNG members with .cls labels) give the same images and
// labels as idx:; braces expand as braceexpand does; each epoch takes whole shards in a shuffled order; a sample
// without its .cls, a truncated shard and a missing shard are refused naming them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "data/data_sources.hpp"
#include "data/epoch_sampler.hpp"
#include "data/idx_source.hpp"
#include "data/image_pipeline.hpp"
#include "data/wds_source.hpp"
#include "error_expect.hpp"
#include "image_files.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;

std::vector<uint8_t> text_bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

TEST(Wds, BracesExpandAsBraceexpand) {
  EXPECT_EQ(expand_braces("/d/train-{000..002}.tar", DataOrigin::train_data),
            (std::vector<std::string>{"/d/train-000.tar", "/d/train-001.tar", "/d/train-002.tar"}));
  EXPECT_EQ(expand_braces("{a,b}-{1..2}", DataOrigin::train_data), (std::vector<std::string>{"a-1", "a-2", "b-1", "b-2"}));
  EXPECT_EQ(expand_braces("plain.tar", DataOrigin::train_data), (std::vector<std::string>{"plain.tar"}));
  expect_error([] { expand_braces("x-{5..2}.tar", DataOrigin::train_data); }, {"FIRST <= LAST"});
}

struct Shards {
  fs::path dir;
  Shards() : dir(fs::temp_directory_path() / ("ddpx_wds_" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Shards() { fs::remove_all(dir); }
};

TEST(Wds, FashionMnistShardsGiveIdxsImagesAndLabels) {
  const char* const fashion = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(fs::path(fashion) / "train-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const IdxSource idx(fashion, DataSplit::train, DataOrigin::train_data);
  const Shards shards;
  std::vector<uint8_t> scratch;
  for (int s = 0; s < 3; ++s) {
    std::vector<std::pair<std::string, std::vector<uint8_t>>> members;
    for (int i = s * 20; i < s * 20 + 20; ++i) {
      const SampleBytes b = idx.read(i, scratch);
      const std::string key = "sample" + std::to_string(100000 + i);
      members.push_back({key + ".png", testing::encode_png({std::vector<uint8_t>(b.data, b.data + b.size), 28, 28, 1})});
      members.push_back({key + ".cls", text_bytes(std::to_string(idx.label(i)) + "\n")});
    }
    testing::write_file((shards.dir / ("train-00" + std::to_string(s) + ".tar")).string(), testing::make_tar(members));
  }
  const WdsSource wds((shards.dir / "train-{000..002}.tar").string(), DataOrigin::train_data);
  ASSERT_EQ(wds.size(), 60);
  EXPECT_EQ(wds.num_classes(), 10);
  EXPECT_EQ(wds.shuffle_groups(), (std::vector<int64_t>{20, 20, 20}));
  TransformSpec spec;
  spec.crop_flip = false;
  spec.size = spec.resize = 28;
  spec.channels = 1;
  PipelineScratch a, b;
  Rng rng(0);
  std::vector<uint8_t> from_wds(784), from_idx(784);
  for (int i = 0; i < 60; ++i) {
    EXPECT_EQ(wds.label(i), idx.label(i));
    transform_sample(wds, i, spec, rng, a, from_wds.data());
    transform_sample(idx, i, spec, rng, b, from_idx.data());
    EXPECT_EQ(from_wds, from_idx) << i;
  }
  // Shard-level shuffle: every epoch is three whole shards, in an order that changes between epochs.
  const EpochSampler sampler(60, 1, 10, 3, true, "wds", wds.shuffle_groups());
  std::set<std::vector<int64_t>> orders;
  for (int64_t epoch = 0; epoch < 6; ++epoch) {
    const std::vector<int64_t> order = sampler.order(epoch);
    std::vector<int64_t> firsts;
    for (int g = 0; g < 3; ++g) {
      const int64_t first = order[size_t(g * 20)];
      EXPECT_EQ(first % 20, 0);
      for (int i = 0; i < 20; ++i) EXPECT_EQ(order[size_t(g * 20 + i)], first + i);
      firsts.push_back(first);
    }
    orders.insert(firsts);
  }
  EXPECT_GT(orders.size(), 1u);
}

TEST(Wds, BadShardsAreRefusedNamingThem) {
  const Shards shards;
  const std::vector<uint8_t> png = testing::read_file(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/images/rgb.png");
  const std::string path = (shards.dir / "s-0.tar").string();
  testing::write_file(path, testing::make_tar({{"a.png", png}, {"a.cls", text_bytes("1")}, {"b.jpg", png}}));
  expect_error([&] { WdsSource w(path, DataOrigin::train_data); }, {path, "the sample 'b' has no b.cls member"});
  testing::write_file(path, testing::make_tar({{"a.png", png}, {"a.cls", text_bytes("cat")}}));
  expect_error([&] { WdsSource w(path, DataOrigin::train_data); }, {"a.cls holds 'cat', not a class index"});
  std::vector<uint8_t> cut = testing::make_tar({{"a.png", png}, {"a.cls", text_bytes("1")}});
  cut.resize(700);
  testing::write_file(path, cut);
  expect_error([&] { WdsSource w(path, DataOrigin::train_data); }, {path, "past the end of the shard (truncated)"});
  expect_error([&] { WdsSource w((shards.dir / "s-{0..1}.tar").string(), DataOrigin::train_data); }, {"cannot open", "s-1.tar", "braces expand to 2 shards"});
}

TEST(Wds, ALabelOutsideTheModelsClassesNamesTheMember) {
  const Shards shards;
  const std::vector<uint8_t> png = testing::read_file(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/images/rgb.png");
  const std::string path = (shards.dir / "s-0.tar").string();
  testing::write_file(path, testing::make_tar({{"a.png", png}, {"a.cls", text_bytes("1")}, {"b.png", png},
                                               {"b.cls", text_bytes("4")}, {"c.png", png}, {"c.cls", text_bytes("0")}}));
  DatasetContext context;
  context.shape = DataShape{3, 8, 3};
  const DataSpec spec = parse_data_spec("wds:" + path, DataOrigin::train_data);
  expect_error([&] { make_dataset(spec, context); },
               {path + " member b has label 4, but the model has 3 classes (labels 0 to 2)", "the data has 5 classes",
                "classes=5"});
  context.shape.num_classes = 5;
  EXPECT_TRUE(make_dataset(spec, context)->class_names().empty());
}

TEST(Wds, ClassesTxtBesideTheShardsNamesTheClasses) {
  const Shards shards;
  const std::vector<uint8_t> png = testing::read_file(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/images/rgb.png");
  const std::string path = (shards.dir / "s-0.tar").string();
  testing::write_file(path, testing::make_tar({{"a.png", png}, {"a.cls", text_bytes("2")}}));
  testing::write_file((shards.dir / "classes.txt").string(), text_bytes("cat\r\ndog\nfox\nowl\n\n"));
  const WdsSource wds(path, DataOrigin::train_data);
  EXPECT_EQ(wds.class_names(), (std::vector<std::string>{"cat", "dog", "fox", "owl"}));
  EXPECT_EQ(wds.num_classes(), 4);  // the list's, not the largest label + 1
  testing::write_file((shards.dir / "classes.txt").string(), text_bytes("cat\ndog\n"));
  expect_error([&] { WdsSource w(path, DataOrigin::train_data); }, {"classes.txt names 2 classes", "the shards hold label 2"});
  testing::write_file((shards.dir / "classes.txt").string(), text_bytes("cat\n\nfox\n"));
  expect_error([&] { WdsSource w(path, DataOrigin::train_data); }, {"classes.txt line 2 is empty"});
}

}  // namespace
}  // namespace ddpx
