// Agreement checks by digest all-gather; values exchanged only to write the error message.
#include "dist/agreement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/fnv1a.hpp"
#include "dist/host_collectives.hpp"

namespace ddpx {
namespace {

constexpr size_t kQuotedBytes = 200;
constexpr size_t kMoreSettingsNamed = 3;

// A value's digest includes its length, so "ab"+"c" and "a"+"bc" differ.
uint64_t value_digest(const std::string& value) { return fnv1a(value) ^ (value.size() * 0x9e3779b97f4a7c15ULL); }

struct TableDigest {
  uint64_t hash;
  uint64_t entries;
  bool operator==(const TableDigest&) const = default;
};

std::string join_ranks(const std::vector<size_t>& ranks) {
  std::string text;
  for (size_t r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

}  // namespace

void require_agreement(Communicator& comm, const std::vector<AgreedSetting>& settings) {
  const size_t world = static_cast<size_t>(comm.size());
  TableDigest mine{kFnv1aOffset, settings.size()};
  for (const AgreedSetting& s : settings) mine.hash = fnv1a(s.name + '\0' + s.value + '\0', mine.hash);
  std::vector<TableDigest> tables(world);
  all_gather_host(comm, &mine, tables.data(), sizeof(TableDigest));
  if (std::all_of(tables.begin(), tables.end(), [&](const TableDigest& t) { return t == tables[0]; })) return;

  // Every rank saw the same digests, so every rank takes this path together.
  for (size_t r = 1; r < world; ++r)
    DDPX_REQUIRE(tables[r].entries == tables[0].entries,
                 "ranks run different ddpx builds: rank 0 checks {} start-up settings, rank {} checks {}; start "
                 "every rank from the same ddpx executable", tables[0].entries, r, tables[r].entries);
  const size_t entries = settings.size();
  std::vector<uint64_t> my_values(entries), all_values(entries * world);
  for (size_t i = 0; i < entries; ++i) my_values[i] = value_digest(settings[i].value);
  all_gather_host(comm, my_values.data(), all_values.data(), entries * sizeof(uint64_t));
  auto ranks_differing = [&](size_t entry) {
    std::vector<size_t> ranks;
    for (size_t r = 1; r < world; ++r)
      if (all_values[r * entries + entry] != all_values[entry]) ranks.push_back(r);
    return ranks;
  };
  size_t first = entries;
  std::vector<std::string> also;
  for (size_t i = 0; i < entries; ++i) {
    if (ranks_differing(i).empty()) continue;
    if (first == entries) first = i;
    else if (also.size() < kMoreSettingsNamed) also.push_back(settings[i].name);
  }
  // Same values but different names: only a build difference can do that.
  DDPX_REQUIRE(first < entries, "ranks run different ddpx builds: their start-up settings are named differently; "
                                "start every rank from the same ddpx executable");
  const std::vector<size_t> differing = ranks_differing(first);

  std::vector<char> quoted(kQuotedBytes + 1, '\0');
  const std::string& value = settings[first].value;
  std::string shown = value.size() > kQuotedBytes ? value.substr(0, kQuotedBytes - 3) + "..." : value;
  std::memcpy(quoted.data(), shown.data(), shown.size());
  std::vector<char> all(world * quoted.size());
  all_gather_host(comm, quoted.data(), all.data(), quoted.size());
  auto value_of = [&](size_t rank) { return std::string(all.data() + rank * quoted.size()); };
  std::string message = fmt::format("ranks disagree on {}: rank 0 has '{}', rank {} has '{}'", settings[first].name,
                                    value_of(0), differing[0], value_of(differing[0]));
  if (differing.size() > 1) message += fmt::format(" (ranks differing from rank 0: {})", join_ranks(differing));
  if (!also.empty()) {
    std::string names;
    for (const std::string& name : also) names += (names.empty() ? "" : ", ") + name;
    message += "; they also disagree on " + names;
  }
  throw Error(message);
}

void require_agreement(Communicator& comm, std::string_view what, const std::string& value) {
  require_agreement(comm, std::vector<AgreedSetting>{{std::string(what), value}});
}

}  // namespace ddpx
