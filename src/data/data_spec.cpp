// Parsing and spelling of --data / --val (see data_spec.hpp); the accepted names come from the registry's rows.
#include "data/data_spec.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/error.hpp"
#include "data/data_source_row.hpp"
#include "data/dataset.hpp"

namespace ddpx {
namespace {

std::string accepted_syntaxes() {
  std::string out;
  for (const DataSourceRow& row : data_source_rows()) out += fmt::format("{}{}", out.empty() ? "" : ", ", row.syntax);
  return out;
}

}  // namespace

std::string_view data_source_name(DataSource source) { return data_source_row(source).name; }

bool DataSpec::is_image_source() const {
  return source == DataSource::idx || source == DataSource::folder || source == DataSource::pack ||
         source == DataSource::wds;
}

bool DataSpec::has_epochs() const { return is_image_source() || source == DataSource::npy; }

std::string DataSpec::text() const {
  const std::string_view name = data_source_name(source);
  if (!data_source_row(source).takes_location) return std::string(name);
  if (source == DataSource::idx) return fmt::format("{}:{}:{}", name, location, split == DataSplit::test ? "test" : "train");
  return fmt::format("{}:{}", name, location);
}

std::string DataSpec::as_typed() const { return fmt::format("{} {}", origin_flag(origin), text()); }

DataSpec parse_data_spec(std::string_view text, DataOrigin origin) {
  const std::string_view flag = origin_flag(origin);
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  for (const DataSourceRow& row : data_source_rows()) {
    if (row.name != name) continue;
    DataSpec spec;
    spec.source = row.source;
    spec.origin = origin;
    if (!row.takes_location) {
      DDPX_REQUIRE(colon == std::string_view::npos, "{} '{}': {} takes nothing after it (accepted: {})", flag, text,
                   name, accepted_syntaxes());
      return spec;
    }
    DDPX_REQUIRE(colon != std::string_view::npos && colon + 1 < text.size(),
                 "{} '{}': {} needs a location: {}", flag, text, name, row.syntax);
    std::string_view location = text.substr(colon + 1);
    if (row.source == DataSource::idx) {
      // idx:DIR[:train|test]: a trailing :train or :test picks the split (a directory named "train" is idx:train:train).
      const size_t last = location.rfind(':');
      if (last != std::string_view::npos) {
        const std::string_view split = location.substr(last + 1);
        DDPX_REQUIRE(split == "train" || split == "test",
                     "{} '{}': the split '{}' is neither train nor test ({})", flag, text, split, row.syntax);
        spec.split = split == "test" ? DataSplit::test : DataSplit::train;
        location = location.substr(0, last);
      }
      DDPX_REQUIRE(!location.empty(), "{} '{}': the directory is empty ({})", flag, text, row.syntax);
    }
    spec.location = std::string(location);
    return spec;
  }
  fail("{} '{}' is not a known data source; accepted: {} (or --images X.npy --labels Y.npy)", flag, text,
       accepted_syntaxes());
}

Augmentation parse_augmentation(std::string_view text) {
  if (text == "auto") return Augmentation::automatic;
  if (text == "crop-flip") return Augmentation::crop_flip;
  if (text == "resize") return Augmentation::resize;
  fail("--augment '{}' is not known; choose auto, crop-flip or resize", text);
}

int64_t parse_shuffle_buffer(std::string_view text) {
  if (text == "auto") return kAutoShuffleBuffer;
  int64_t buffer = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), buffer);
  DDPX_REQUIRE(ec == std::errc() && end == text.data() + text.size() && buffer >= 0,
               "--shuffle-buffer {}: give a number of samples, 0 or more (0 or 1: off, the shards' stored order), or "
               "auto", text);
  return buffer;
}

std::string shuffle_buffer_text(int64_t buffer) {
  return buffer == kAutoShuffleBuffer ? "auto" : std::to_string(buffer);
}

std::vector<float> parse_float_list(std::string_view text, std::string_view flag) {
  std::vector<float> values;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    char* end = nullptr;
    const float value = std::strtof(item.c_str(), &end);
    DDPX_REQUIRE(!item.empty() && end == item.c_str() + item.size() && std::isfinite(value),
                 "{} '{}': '{}' is not a number; give one value per channel, comma-separated (e.g. 0.485,0.456,0.406)",
                 flag, text, item);
    values.push_back(value);
    if (comma == std::string_view::npos) return values;
    start = comma + 1;
  }
}

}  // namespace ddpx
