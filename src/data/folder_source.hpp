// FolderSource: torchvision's ImageFolder layout (--data folder:DIR): one subfolder per class, classes sorted by
// name, label = the class's index; the files of a class are found recursively (symlinks followed) and ordered as
// ImageFolder orders them (by folder, then file name). Unlike ImageFolder, each real folder is read once: a folder
// reached a second time through a symlink (a loop such as a/loop -> ., or a/up -> ..) is an error naming the link,
// so no image is counted twice or labelled with another class.
// Guarantees:
//  - Files named *.jpg, *.jpeg, *.png (any case) are samples; the format is taken from the file's first bytes, not
//    its name. Other image formats ImageFolder would take (.bmp, .ppm, .pgm, .tif, .tiff, .webp) are refused,
//    naming the file and the conversion; files with other names are ignored, as ImageFolder does.
//  - An empty DIR, a DIR without class folders, or a class folder without images is an error naming the folder.
//  - A file that cannot be read when a batch needs it is an error naming it (the listing is made once, at start).
#pragma once
#include <string>
#include <vector>

#include "data/data_origin.hpp"
#include "data/sample_source.hpp"

namespace ddpx {

class FolderSource : public SampleSource {
 public:
  // `origin`: the flag that named the folder (--data, --val, ddpx pack SOURCE, ...), named by every error here.
  FolderSource(const std::string& directory, DataOrigin origin);
  std::string describe() const override;
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  int32_t label(int64_t index) const override { return labels_[static_cast<size_t>(index)]; }
  int64_t num_classes() const override { return static_cast<int64_t>(classes_.size()); }
  std::vector<std::string> class_names() const override { return classes_; }
  std::string sample_name(int64_t index) const override { return files_[static_cast<size_t>(index)]; }
  SampleBytes read(int64_t index, std::vector<uint8_t>& scratch) const override;
  bool photographs() const override { return true; }
  std::vector<FileRole> inputs() const override;  // every folder read (whole trees) and every linked image
  uint64_t content_hash() const override;          // the file list (paths under DIR) and the labels

 private:
  std::string directory_;
  std::vector<std::string> folders_;       // every real folder read, once each (Note [Each folder once])
  std::vector<std::string> linked_files_;  // images reached through a file symlink
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int32_t> labels_;
};

// JPEG (FF D8 FF) or PNG (89 'PNG' 0D 0A 1A 0A) from the first bytes; anything else is an error naming `name`.
SampleFormat detect_image_format(const uint8_t* data, size_t size, const std::string& name);

// Reads a whole file into `bytes` (at most 1 GiB); errors name the file and what to do.
void read_whole_file(const std::string& path, std::vector<uint8_t>& bytes);

}  // namespace ddpx
