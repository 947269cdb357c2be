// Slurm host-list parsing; see slurm_nodelist.hpp.
#include "dist/slurm_nodelist.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "core/error.hpp"

namespace ddpx {
namespace {

constexpr uint64_t kLargestNumber = 1000000000;  // 10^9: larger is no host index

struct NumberRange {
  uint64_t low = 0, high = 0;
  size_t width = 0;  // zero-padded width; 0 when the low end has no leading zero
};

// One part of an item: literal text, or a bracket group (ranges non-empty).
struct ItemPart {
  std::string literal;
  std::vector<NumberRange> ranges;
};

using Item = std::vector<ItemPart>;

bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

class HostListParser {
 public:
  HostListParser(std::string_view list, std::string_view variable) : list_(list), variable_(variable) {}

  std::vector<Item> parse() {
    if (list_.empty()) bad("it is empty");
    std::vector<Item> items;
    while (true) {
      items.push_back(parse_item());
      if (pos_ == list_.size()) break;
      ++pos_;  // the comma that ended the item
      if (pos_ == list_.size()) bad("it ends with a comma");
    }
    return items;
  }

 private:
  [[noreturn]] void bad(std::string_view problem) const {
    fail("{}='{}' is not a Slurm host list: {} (expected names like node01, node[01-04,07] or a[1-2],b3)",
         variable_, list_, problem);
  }

  Item parse_item() {
    Item item;
    const size_t start = pos_;
    while (pos_ < list_.size() && list_[pos_] != ',') {
      const char c = list_[pos_];
      if (c == '[') {
        item.push_back(ItemPart{"", parse_group()});
      } else if (c == ']') {
        bad(fmt::format("a ']' at position {} closes no '['", pos_ + 1));
      } else if (is_host_char(c)) {
        std::string literal;
        while (pos_ < list_.size() && is_host_char(list_[pos_])) literal += list_[pos_++];
        item.push_back(ItemPart{literal, {}});
      } else {
        bad(fmt::format("the character '{}' at position {} belongs in no host name", c, pos_ + 1));
      }
    }
    if (pos_ == start) bad(fmt::format("an empty host name at position {}", pos_ + 1));
    if (item.front().literal.empty() && item.size() == 1) bad("a bracket group without a host name");
    return item;
  }

  // At '['; returns after the matching ']'.
  std::vector<NumberRange> parse_group() {
    const size_t open = pos_++;
    std::vector<NumberRange> ranges;
    while (true) {
      if (pos_ == list_.size()) bad(fmt::format("the '[' at position {} is never closed", open + 1));
      if (list_[pos_] == '[') bad(fmt::format("a '[' inside the group opened at position {}", open + 1));
      if (list_[pos_] == ']') bad(fmt::format("an empty number at position {}", pos_ + 1));
      NumberRange range;
      const std::string low = parse_number();
      range.low = std::stoull(low);
      range.width = low.size() > 1 && low[0] == '0' ? low.size() : 0;
      range.high = range.low;
      if (pos_ < list_.size() && list_[pos_] == '-') {
        ++pos_;
        range.high = std::stoull(parse_number());
        if (range.high < range.low) bad(fmt::format("the range {}-{} runs backwards", range.low, range.high));
      }
      ranges.push_back(range);
      if (pos_ == list_.size()) bad(fmt::format("the '[' at position {} is never closed", open + 1));
      if (list_[pos_] == ']') {
        ++pos_;
        return ranges;
      }
      if (list_[pos_] == '[') bad(fmt::format("a '[' inside the group opened at position {}", open + 1));
      if (list_[pos_] != ',') bad(fmt::format("the character '{}' at position {} is no digit", list_[pos_], pos_ + 1));
      ++pos_;
    }
  }

  std::string parse_number() {
    std::string digits;
    while (pos_ < list_.size() && std::isdigit(static_cast<unsigned char>(list_[pos_]))) digits += list_[pos_++];
    if (digits.empty()) {
      if (pos_ == list_.size()) bad("it ends inside a bracket group");
      bad(fmt::format("expected a number at position {}, found '{}'", pos_ + 1, list_[pos_]));
    }
    if (digits.size() > 10 || std::stoull(digits) > kLargestNumber)
      bad(fmt::format("the number {} is too large for a host index", digits));
    return digits;
  }

  std::string_view list_, variable_;
  size_t pos_ = 0;
};

std::string format_index(uint64_t value, size_t width) { return fmt::format("{:0{}}", value, width); }

uint64_t group_size(const std::vector<NumberRange>& ranges) {
  uint64_t size = 0;
  for (const NumberRange& r : ranges) size += r.high - r.low + 1;
  return size;
}

// Appends every host of `item` (parts from `part` on) behind `prefix`.
void expand_item(const Item& item, size_t part, const std::string& prefix, std::vector<std::string>& hosts) {
  if (part == item.size()) {
    hosts.push_back(prefix);
    return;
  }
  const ItemPart& p = item[part];
  if (p.ranges.empty()) return expand_item(item, part + 1, prefix + p.literal, hosts);
  for (const NumberRange& r : p.ranges)
    for (uint64_t value = r.low; value <= r.high; ++value)
      expand_item(item, part + 1, prefix + format_index(value, r.width), hosts);
}

}  // namespace

std::string first_host(std::string_view list, std::string_view variable) {
  const std::vector<Item> items = HostListParser(list, variable).parse();
  std::string host;
  for (const ItemPart& part : items.front())
    host += part.ranges.empty() ? part.literal : format_index(part.ranges.front().low, part.ranges.front().width);
  return host;
}

std::vector<std::string> expand_hosts(std::string_view list, std::string_view variable, size_t max_hosts) {
  const std::vector<Item> items = HostListParser(list, variable).parse();
  uint64_t total = 0;
  for (const Item& item : items) {
    uint64_t count = 1;
    for (const ItemPart& part : item)
      if (!part.ranges.empty()) count = std::min<uint64_t>(count * group_size(part.ranges), UINT64_C(1) << 40);
    total += count;
  }
  DDPX_REQUIRE(total <= max_hosts, "{}='{}' names {} hosts, more than the {} ddpx expands", variable, list, total,
               max_hosts);
  std::vector<std::string> hosts;
  for (const Item& item : items) expand_item(item, 0, "", hosts);
  return hosts;
}

}  // namespace ddpx
