// --data / --val parse once into a DataSpec whose text() spells it back; every source has one registry row; the
// refusals name the flag, the text and the accepted syntaxes.
#include <gtest/gtest.h>

#include <set>

#include "data/data_sources.hpp"
#include "data/data_spec.hpp"
#include "error_expect.hpp"

namespace ddpx {
namespace {

using testing::expect_error;

TEST(DataSpec, EveryCanonicalSpellingRoundTrips) {
  for (const char* text : {"synthetic", "learnable", "synthetic-device", "npy", "idx:/usr/share/datasets/fashion-mnist:train",
                           "idx:/d:test", "idx:relative/dir:train", "folder:/data/imagenet/train", "pack:/data/train.pack", "wds:/d/train-{000000..000127}.tar"})
    EXPECT_EQ(parse_data_spec(text, DataOrigin::train_data).text(), text);
  const DataSpec idx = parse_data_spec("idx:/usr/share/datasets/fashion-mnist", DataOrigin::train_data);
  EXPECT_EQ(idx.source, DataSource::idx);
  EXPECT_EQ(idx.location, "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(idx.split, DataSplit::train);  // the default split
  EXPECT_EQ(idx.text(), "idx:/usr/share/datasets/fashion-mnist:train");
  EXPECT_EQ(parse_data_spec("idx:/d:test", DataOrigin::train_val).split, DataSplit::test);
  EXPECT_TRUE(idx.is_image_source());
  EXPECT_FALSE(parse_data_spec("learnable", DataOrigin::train_data).is_image_source());
}

TEST(DataSpec, EverySourceHasExactlyOneRow) {
  std::set<int> seen;
  std::set<std::string_view> names;
  for (const DataSourceRow& row : data_source_rows()) {
    EXPECT_TRUE(seen.insert(static_cast<int>(row.source)).second) << row.name;
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_NE(data_sources_help().find(row.syntax), std::string::npos) << row.syntax;
  }
  for (DataSource source : {DataSource::synthetic, DataSource::learnable, DataSource::synthetic_device,
                            DataSource::npy, DataSource::idx, DataSource::folder, DataSource::pack, DataSource::wds})
    EXPECT_EQ(data_source_row(source).source, source);
}

TEST(DataSpec, RefusalsNameTheFlagTheTextAndTheSyntaxes) {
  expect_error([] { parse_data_spec("imagenet", DataOrigin::train_data); },
               {"--data 'imagenet' is not a known data source", "synthetic", "idx:DIR[:train|test]"});
  expect_error([] { parse_data_spec("idx", DataOrigin::train_val); }, {"--val 'idx'", "needs a location", "idx:DIR[:train|test]"});
  expect_error([] { parse_data_spec("idx:", DataOrigin::train_data); }, {"--data 'idx:'", "needs a location"});
  expect_error([] { parse_data_spec("idx:/d:val", DataOrigin::train_data); }, {"the split 'val' is neither train nor test"});
  expect_error([] { parse_data_spec("synthetic:3", DataOrigin::train_data); }, {"synthetic takes nothing after it"});
}

}  // namespace
}  // namespace ddpx
