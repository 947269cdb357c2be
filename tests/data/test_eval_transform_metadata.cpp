// The eval transform a training run records with its weights reads back as the settings it came from; a file
// without the record reads as the defaults; a damaged record is refused naming the file and the key.
#include <gtest/gtest.h>

#include "data/eval_transform_metadata.hpp"
#include "error_expect.hpp"

namespace ddpx {
namespace {

TEST(EvalTransformMetadata, WhatTrainingRecordsReadsBackAsTheSameSettings) {
  ImagePipelineSettings settings;
  settings.augmentation = Augmentation::resize;
  settings.normalization.mean = {0.25f};
  settings.normalization.std = {0.5f};
  settings.max_pixels = 12345;
  settings.dct_scaling = false;
  const DataSpec data = parse_data_spec("idx:/d/fashion", DataOrigin::train_data);
  const TensorMetadata metadata = eval_transform_metadata(settings, data, 1.0);
  const RecordedEvalTransform read = read_eval_transform(metadata, "w.safetensors");
  EXPECT_TRUE(read.recorded);
  EXPECT_EQ(read.trained_on, data.text());
  EXPECT_EQ(read.settings.augmentation, Augmentation::resize);
  EXPECT_EQ(read.settings.normalization.mean, settings.normalization.mean);
  EXPECT_EQ(read.settings.normalization.std, settings.normalization.std);
  EXPECT_EQ(read.settings.max_pixels, 12345);
  EXPECT_FALSE(read.settings.dct_scaling);
  EXPECT_EQ(read.settings.center_crop_fraction, 1.0);
  // Defaults stay defaults: no mean or std recorded, so the model's channel count picks ImageNet's.
  const RecordedEvalTransform plain =
      read_eval_transform(eval_transform_metadata(ImagePipelineSettings{}, data, 0.875), "w.safetensors");
  EXPECT_TRUE(plain.settings.normalization.mean.empty());
  EXPECT_EQ(plain.settings.augmentation, Augmentation::automatic);
  EXPECT_EQ(plain.settings.center_crop_fraction, 0.875);
}

TEST(EvalTransformMetadata, NoRecordReadsAsDefaultsAndADamagedOneIsRefused) {
  const RecordedEvalTransform none = read_eval_transform({{"format", "pt"}}, "torch.safetensors");
  EXPECT_FALSE(none.recorded);
  EXPECT_EQ(none.settings.center_crop_fraction, 0.0);
  testing::expect_error(
      [] {
        read_eval_transform({{"ddpx.eval_transform", "[1, 2"}}, "w.safetensors");
      },
      {"--weights w.safetensors", "ddpx.eval_transform", "is not JSON", "--augment"});
  testing::expect_error(
      [] {
        read_eval_transform({{"ddpx.eval_transform", "{\"mean\": \"x\"}"}}, "w.safetensors");
      },
      {"ddpx.eval_transform", "wrong type"});
}

}  // namespace
}  // namespace ddpx
