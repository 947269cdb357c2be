// WebDataset shards; see wds_source.hpp.
#include "data/wds_source.hpp"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/byte_range.hpp"
#include "core/error.hpp"
#include "core/fnv1a.hpp"
#include "data/folder_source.hpp"

namespace ddpx {
namespace {

constexpr uint64_t kMaxNameRecordBytes = 1 << 20;  // a pax or GNU long-name record: a path, not data
constexpr uint64_t kMaxClassListBytes = 64 << 20;  // classes.txt: names, one a line
constexpr size_t kMaxShards = 1000000;              // shard names a pattern may expand to (ImageNet: 1,282 shards)
constexpr long kMaxClasses = 1000000;               // a label beyond it is no class index (ImageNet-21k: 21,841)

uint64_t parse_octal(std::string_view flag, const char* field, size_t width, const std::string& path, uint64_t offset) {
  uint64_t value = 0;
  size_t i = 0;
  while (i < width && (field[i] == ' ' || field[i] == '\0')) ++i;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) value = value * 8 + static_cast<uint64_t>(field[i] - '0');
  for (; i < width; ++i)
    DDPX_REQUIRE(field[i] == ' ' || field[i] == '\0', "{} wds: {}: the tar header at byte {} is damaged (a size "
                 "field holds '{}'); rewrite the shard", flag, path, offset, std::string(field, width));
  return value;
}

// WebDataset's base_plus_ext: key = path up to the first '.' of the file name, extension = the rest.
bool split_key(const std::string& name, std::string& key, std::string& ext) {
  const size_t slash = name.rfind('/');
  const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos) return false;
  key = name.substr(0, dot);
  ext = name.substr(dot + 1);
  return true;
}

}  // namespace

std::vector<std::string> expand_braces(const std::string& pattern, DataOrigin origin) {
  const std::string_view flag = origin_flag(origin);
  const size_t open = pattern.find('{');
  if (open == std::string::npos) return {pattern};
  const size_t close = pattern.find('}', open);
  DDPX_REQUIRE(close != std::string::npos, "{} wds:{}: a '{{' without its '}}'", flag, pattern);
  const std::string inside = pattern.substr(open + 1, close - open - 1);
  const std::string head = pattern.substr(0, open), tail = pattern.substr(close + 1);
  std::vector<std::string> items;
  const size_t dots = inside.find("..");
  if (dots != std::string::npos) {
    const std::string first = inside.substr(0, dots), last = inside.substr(dots + 2);
    char* end_a = nullptr;
    char* end_b = nullptr;
    const long long a = std::strtoll(first.c_str(), &end_a, 10), b = std::strtoll(last.c_str(), &end_b, 10);
    DDPX_REQUIRE(!first.empty() && !last.empty() && *end_a == '\0' && *end_b == '\0' && a <= b &&
                     b - a < static_cast<long long>(kMaxShards),
                 "{} wds:{}: the range {{{}}} is not FIRST..LAST with FIRST <= LAST (e.g. {{000000..000127}})", flag,
                 pattern, inside);
    for (long long v = a; v <= b; ++v) items.push_back(fmt::format("{:0{}d}", v, first.size()));
  } else {
    size_t start = 0;
    for (;;) {
      const size_t comma = inside.find(',', start);
      items.push_back(inside.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  // Each range is capped, and so is their product (issue 48: x{0..9999}{0..9999}.tar grew to 3.8 GB silently).
  const std::vector<std::string> rests = expand_braces(tail, origin);
  DDPX_REQUIRE(items.size() * rests.size() <= kMaxShards,
               "{} wds:{}: the braces expand to {} x {} shard names, more than the {} a data set of shards has; "
               "check the pattern", flag, pattern, items.size(), rests.size(), kMaxShards);
  std::vector<std::string> out;
  out.reserve(items.size() * rests.size());
  for (const std::string& item : items)
    for (const std::string& rest : rests) out.push_back(head + item + rest);
  return out;
}

WdsSource::WdsSource(const std::string& pattern, DataOrigin origin)
    : pattern_(pattern), origin_(origin), shards_(expand_braces(pattern, origin)) {
  const std::string_view flag = origin_flag(origin);
  files_.reserve(shards_.size());
  for (const std::string& shard : shards_)
    files_.emplace_back(shard, fmt::format("{} wds:{} (braces expand to {} shards)", flag, pattern, shards_.size()));
  for (size_t s = 0; s < shards_.size(); ++s) index_shard(static_cast<int>(s));
  DDPX_REQUIRE(!samples_.empty(), "{} wds:{}: the shards hold no samples", flag, pattern);
  read_class_names();
}

void WdsSource::index_shard(int shard) {
  const std::string_view flag = origin_flag(origin_);
  const std::string& path = shards_[static_cast<size_t>(shard)];
  const InputFile& file = files_[static_cast<size_t>(shard)];
  const uint64_t file_size = file.size();
  const size_t first_sample = samples_.size();
  std::string pax_path;
  bool have_label = false, have_image = false;
  std::string image_member;  // the image member's name, for the error on a second one
  Sample current;
  current.shard = shard;
  const auto finish = [&] {
    if (current.key.empty()) return;
    DDPX_REQUIRE(have_label, "{} wds: {}: the sample '{}' has no {}.cls member (its label); every sample needs "
                 "one, as WebDataset's ImageNet shards have", flag, path, current.key, current.key);
    DDPX_REQUIRE(have_image, "{} wds: {}: the sample '{}' has no .jpg, .jpeg or .png member", flag, path, current.key);
    classes_ = std::max<int64_t>(classes_, current.label + 1);
    samples_.push_back(current);
  };
  char header[512];
  if (file_size >= 2) {
    uint8_t magic[2];
    file.read_at(0, magic, 2);
    DDPX_REQUIRE(!(magic[0] == 0x1f && magic[1] == 0x8b), "{} wds: {} is gzip-compressed (a .tar.gz); ddpx reads "
                 "uncompressed tar shards, as they are read by offset: gunzip it (gunzip -k {})", flag, path, path);
  }
  for (uint64_t offset = 0; range_fits(offset, 512, file_size);) {
    file.read_at(offset, header, 512);
    if (header[0] == '\0') break;  // the end-of-archive blocks
    const uint64_t size = parse_octal(flag, header + 124, 12, path, offset);
    const char type = header[156];
    const uint64_t data = offset + 512;
    DDPX_REQUIRE(range_fits(data, size, file_size), "{} wds: {}: the member at byte {} claims {} bytes past the "
                 "end of the shard (truncated); rewrite it", flag, path, offset, size);
    offset = data + (size + 511) / 512 * 512;  // cannot wrap: data + size <= file_size and size < 2^36
    if (type == 'x') {  // pax: a "path" record renames the next member
      DDPX_REQUIRE(size <= kMaxNameRecordBytes, "{} wds: {}: the pax header at byte {} holds {} bytes, more than "
                   "the {} a member's path needs; rewrite the shard", flag, path, data - 512, size, kMaxNameRecordBytes);
      std::string records(size, '\0');
      file.read_at(data, records.data(), size);
      const size_t at = records.find(" path=");
      if (at != std::string::npos) pax_path = records.substr(at + 6, records.find('\n', at) - at - 6);
      continue;
    }
    if (type == 'L') {  // GNU long name
      DDPX_REQUIRE(size <= kMaxNameRecordBytes, "{} wds: {}: the GNU long name at byte {} holds {} bytes, more "
                   "than the {} a member's path needs; rewrite the shard", flag, path, data - 512, size, kMaxNameRecordBytes);
      std::string name(size, '\0');
      file.read_at(data, name.data(), size);
      pax_path = name.c_str();
      continue;
    }
    if (type != '0' && type != '\0') continue;  // directories, links, global pax headers
    std::string name = pax_path;
    pax_path.clear();
    if (name.empty()) {
      name = std::string(header, strnlen(header, 100));
      const std::string prefix(header + 345, strnlen(header + 345, 155));
      if (std::memcmp(header + 257, "ustar", 5) == 0 && !prefix.empty()) name = prefix + "/" + name;
    }
    std::string key, ext;
    if (!split_key(name, key, ext)) continue;
    if (key != current.key) {
      finish();
      current = Sample{};
      current.shard = shard;
      current.key = key;
      have_label = have_image = false;
    }
    // WebDataset refuses a sample with two members of one extension; ddpx too: which one is the label or the image
    // would be a guess (issue 48: a second .cls was silently taken, a second image silently dropped).
    DDPX_REQUIRE(!(ext == "cls" && have_label), "{} wds: {}: the sample '{}' has two {}.cls members (labels); "
                 "each sample has one: rewrite the shard", flag, path, key, key);
    const bool image = ext == "jpg" || ext == "jpeg" || ext == "png";
    DDPX_REQUIRE(!(image && have_image), "{} wds: {}: the sample '{}' has two images ({} and {}); each sample "
                 "has one: rewrite the shard", flag, path, key, image_member, name);
    if (ext == "cls") {
      DDPX_REQUIRE(size > 0 && size <= 32, "{} wds: {}: {}.cls holds {} bytes, not a class index", flag, path, key, size);
      char text[33] = {};
      file.read_at(data, text, size);
      char* end = nullptr;
      const long label = std::strtol(text, &end, 10);
      while (end != nullptr && (*end == '\n' || *end == ' ' || *end == '\r')) ++end;
      DDPX_REQUIRE(end != text && end != nullptr && *end == '\0' && label >= 0,
                   "{} wds: {}: {}.cls holds '{}', not a class index (a whole number from 0)", flag, path, key, text);
      DDPX_REQUIRE(label < kMaxClasses, "{} wds: {}: {}.cls holds class {}, beyond the {} classes ddpx trains a "
                   "head for; check the shard", flag, path, key, label, kMaxClasses);
      current.label = static_cast<int32_t>(label);
      have_label = true;
    } else if (image) {
      current.offset = data;
      current.size = size;
      have_image = true;
      image_member = name;
    }
  }
  finish();
  shard_sizes_.push_back(static_cast<int64_t>(samples_.size() - first_sample));
  DDPX_REQUIRE(shard_sizes_.back() > 0, "{} wds: {} holds no samples (KEY.jpg|png with KEY.cls)", flag, path);
}

void WdsSource::read_class_names() {
  const std::string_view flag = origin_flag(origin_);
  const std::filesystem::path list = std::filesystem::path(shards_.front()).parent_path() / "classes.txt";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(list, ec))) return;
  std::istringstream in(read_small_file(list, kMaxClassListBytes,
                                        fmt::format("{} wds:{} (the class names beside the shards)", flag, pattern_)));
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    names.push_back(line);
  }
  while (!names.empty() && names.back().empty()) names.pop_back();
  DDPX_REQUIRE(static_cast<int64_t>(names.size()) >= classes_,
               "{} wds:{}: {} names {} classes (one a line, line k naming label k), but the shards hold label {}; "
               "add the missing names, or remove the file to train without names", flag, pattern_, list.string(),
               names.size(), classes_ - 1);
  for (size_t k = 0; k < names.size(); ++k)
    DDPX_REQUIRE(!names[k].empty(), "{} wds:{}: {} line {} is empty; every class needs a name", flag, pattern_,
                 list.string(), k + 1);
  class_names_ = std::move(names);
  classes_ = static_cast<int64_t>(class_names_.size());
}

std::vector<FileRole> WdsSource::inputs() const {
  std::vector<FileRole> roles;
  for (const std::string& shard : shards_) roles.push_back({"the data's shard", shard});
  if (!class_names_.empty())
    roles.push_back({"the data's class names", std::filesystem::path(shards_.front()).parent_path() / "classes.txt"});
  return roles;
}

uint64_t WdsSource::content_hash() const {
  uint64_t hash = kFnv1aOffset;
  for (const Sample& s : samples_)
    hash = fnv1a(fmt::format("{}\t{}\t{}\t{}\n", std::filesystem::path(shards_[static_cast<size_t>(s.shard)]).filename().string(),
                             s.key, s.size, s.label), hash);
  for (const std::string& name : class_names_) hash = fnv1a(name + "\n", hash);
  return hash;
}

std::string WdsSource::describe() const {
  return fmt::format("wds {} ({} shards, {} images, {} classes{})", pattern_, shards_.size(),
                     samples_.size(), classes_, class_names_.empty() ? "" : " named in classes.txt");
}

std::string WdsSource::sample_name(int64_t index) const {
  const Sample& s = samples_[static_cast<size_t>(index)];
  return fmt::format("{} member {}", shards_[static_cast<size_t>(s.shard)], s.key);
}

SampleBytes WdsSource::read(int64_t index, std::vector<uint8_t>& scratch) const {
  const Sample& s = samples_[static_cast<size_t>(index)];
  DDPX_REQUIRE(s.size <= (uint64_t{1} << 30), "{}: larger than 1 GiB, not a training image", sample_name(index));
  scratch.resize(static_cast<size_t>(s.size));
  files_[static_cast<size_t>(s.shard)].read_at(s.offset, scratch.data(), scratch.size());
  SampleBytes bytes;
  bytes.format = detect_image_format(scratch.data(), scratch.size(), sample_name(index));
  bytes.data = scratch.data();
  bytes.size = scratch.size();
  return bytes;
}

}  // namespace ddpx
