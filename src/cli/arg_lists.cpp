// List-valued flag parsing (see arg_lists.hpp).
#include "cli/arg_lists.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace ddpx::cli {

std::vector<std::string> split_list(std::string_view text, std::string_view flag) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(begin, end - begin);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty() && std::find(items.begin(), items.end(), item) == items.end()) items.emplace_back(item);
    begin = end + 1;
  }
  DDPX_REQUIRE(!items.empty(), "{} needs at least one item (a comma-separated list), got '{}'", flag, text);
  return items;
}

namespace {

// Every item of the comma list as a T (std::from_chars over the whole item) that passes `valid`; else an error
// naming the flag and the item and saying what each item must be (`expected`).
template <typename T, typename Valid>
std::vector<T> parse_list_of(std::string_view text, std::string_view flag, Valid valid, std::string_view expected) {
  std::vector<T> values;
  for (const std::string& item : split_list(text, flag)) {
    T value{};
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    DDPX_REQUIRE(ec == std::errc() && end == item.data() + item.size() && valid(value), "{}: '{}' is not {}", flag,
                 item, expected);
    values.push_back(value);
  }
  return values;
}

}  // namespace

std::vector<double> parse_number_list(std::string_view text, std::string_view flag) {
  return parse_list_of<double>(text, flag, [](double value) { return std::isfinite(value) && value > 0; },
                               "a positive number (expected e.g. 5,25,100)");
}

std::vector<int> parse_count_list(std::string_view text, std::string_view flag) {
  return parse_list_of<int>(text, flag, [](int value) { return value >= 1; },
                            "a whole number >= 1 (expected e.g. 1,2,4)");
}

int64_t parse_byte_size(std::string_view text, std::string_view flag) {
  std::string_view digits = text;
  if (!digits.empty() && (digits.back() == 'B' || digits.back() == 'b')) digits.remove_suffix(1);
  int64_t unit = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K': case 'k': unit = int64_t{1} << 10; break;
      case 'M': case 'm': unit = int64_t{1} << 20; break;
      case 'G': case 'g': unit = int64_t{1} << 30; break;
      default: break;
    }
    if (unit > 1) digits.remove_suffix(1);
  }
  int64_t count = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  DDPX_REQUIRE(!digits.empty() && ec == std::errc() && end == digits.data() + digits.size() && count > 0 &&
                   count <= std::numeric_limits<int64_t>::max() / unit,
               "{}: '{}' is not a byte size (expected a positive number with an optional K, M or G, e.g. 4K, 256M)",
               flag, text);
  return count * unit;
}

std::vector<int64_t> parse_size_sweep(std::string_view text, std::string_view flag) {
  std::vector<int64_t> sizes;
  if (text.find(':') != std::string_view::npos) {
    const std::vector<std::string> parts = [&] {
      std::vector<std::string> p;
      size_t begin = 0;
      for (size_t colon; (colon = text.find(':', begin)) != std::string_view::npos; begin = colon + 1)
        p.emplace_back(text.substr(begin, colon - begin));
      p.emplace_back(text.substr(begin));
      return p;
    }();
    DDPX_REQUIRE(parts.size() == 2 || parts.size() == 3,
                 "{}: '{}' is not a range; expected MIN:MAX or MIN:MAX:FACTOR, e.g. 1K:1G", flag, text);
    const int64_t first = parse_byte_size(parts[0], flag);
    const int64_t last = parse_byte_size(parts[1], flag);
    int64_t factor = 2;
    if (parts.size() == 3) {
      auto [end, ec] = std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), factor);
      DDPX_REQUIRE(ec == std::errc() && end == parts[2].data() + parts[2].size() && factor >= 2,
                   "{}: the factor in '{}' must be a whole number >= 2", flag, text);
    }
    DDPX_REQUIRE(first <= last, "{}: '{}' runs backwards; write the smaller size first", flag, text);
    for (int64_t size = first; size <= last; size *= factor) {
      sizes.push_back(size);
      if (size > last / factor) break;
    }
    return sizes;
  }
  for (const std::string& item : split_list(text, flag)) sizes.push_back(parse_byte_size(item, flag));
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::string format_byte_size(int64_t bytes) {
  if (bytes > 0 && bytes % (int64_t{1} << 30) == 0) return fmt::format("{}G", bytes >> 30);
  if (bytes > 0 && bytes % (int64_t{1} << 20) == 0) return fmt::format("{}M", bytes >> 20);
  if (bytes > 0 && bytes % (int64_t{1} << 10) == 0) return fmt::format("{}K", bytes >> 10);
  return fmt::format("{}", bytes);
}

std::string whole_number_problem(const std::string& text, bool allow_negative) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  bool ok = false;
  if (allow_negative) {
    int64_t value = 0;
    const auto [stop, error] = std::from_chars(begin, end, value);
    ok = error == std::errc() && stop == end;
  } else {
    uint64_t value = 0;
    const auto [stop, error] = std::from_chars(begin, end, value);
    ok = !text.empty() && text[0] != '-' && error == std::errc() && stop == end;
  }
  if (ok) return "";
  return "'" + text + "' is not a whole number " +
         (allow_negative ? std::string("that fits 64 bits") : std::string("in [0, 18446744073709551615]"));
}

}  // namespace ddpx::cli
