// IdxSource: the MNIST / Fashion-MNIST idx format (--data idx:DIR[:train|test]).
// Reads DIR/train-images-idx3-ubyte and DIR/train-labels-idx1-ubyte (test: t10k-*), each plain or gzipped (.gz,
// as Debian's dataset-fashion-mnist installs them under /usr/share/datasets/fashion-mnist), whole into memory.
// Guarantees: the magic numbers (0x803 images, 0x801 labels), the sizes and the counts are checked against each
// other and the file lengths; a missing, truncated or mismatched file is an error naming it and what to do. The
// files are opened as io/posix_file's InputFile (a FIFO or device is refused at once); a .gz is inflated only up
// to the size its header declares (+1 byte), and refused at once when that size is more than its compressed bytes
// can hold, so a small file cannot make ddpx allocate gigabytes (Note [Bounded gunzip] in idx_source.cpp).
// Images are 1-channel HWC uint8 served in place; classes = the largest label + 1. Fashion-MNIST's files name their
// ten classes as torchvision does (recognized by their bytes: see Note [Fashion-MNIST's class names]); other idx
// files name none.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/data_origin.hpp"
#include "data/data_split.hpp"
#include "data/sample_source.hpp"

namespace ddpx {

class IdxSource : public SampleSource {
 public:
  // `origin`: the flag that named the files (--data, --val, ddpx pack SOURCE, ...), named by every error here.
  IdxSource(const std::string& directory, DataSplit split, DataOrigin origin);
  std::string describe() const override;
  int64_t size() const override { return count_; }
  int32_t label(int64_t index) const override { return labels_[static_cast<size_t>(index)]; }
  int64_t num_classes() const override { return class_names_.empty() ? classes_ : std::ssize(class_names_); }
  std::vector<std::string> class_names() const override { return class_names_; }
  std::string sample_name(int64_t index) const override;
  SampleBytes read(int64_t index, std::vector<uint8_t>& scratch) const override;
  bool photographs() const override { return false; }
  std::vector<FileRole> inputs() const override {
    return {{"the data's idx images", images_path_}, {"the data's idx labels", labels_path_}};
  }
  uint64_t content_hash() const override { return content_hash_; }

 private:
  std::string images_path_, labels_path_;
  int64_t count_ = 0, classes_ = 0;
  int height_ = 0, width_ = 0;
  std::vector<uint8_t> pixels_;
  std::vector<int32_t> labels_;
  std::vector<std::string> class_names_;
  uint64_t content_hash_ = 0;
};

}  // namespace ddpx
