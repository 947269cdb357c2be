// All-gather of variable-length strings: lengths first, then the bytes padded to the longest, both through
// dist/host_collectives (which stages host bytes for device communicators: no staging of its own here).
#include "dist/gather_strings.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dist/host_collectives.hpp"

namespace ddpx {

std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine) {
  const int n = comm.size();
  int64_t length = static_cast<int64_t>(mine.size());
  std::vector<int64_t> lengths(static_cast<size_t>(n));
  all_gather_host(comm, &length, lengths.data(), sizeof(int64_t));
  const size_t longest = std::max<size_t>(1, static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end())));
  std::vector<char> padded(longest, 0), all(longest * static_cast<size_t>(n));
  std::memcpy(padded.data(), mine.data(), mine.size());
  all_gather_host(comm, padded.data(), all.data(), longest);
  std::vector<std::string> result;
  for (int r = 0; r < n; ++r) result.emplace_back(all.data() + r * longest, static_cast<size_t>(lengths[r]));
  return result;
}

}  // namespace ddpx
