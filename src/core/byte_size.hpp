// Sizes and counts as a person reads them: the prefix chosen by magnitude (k, M, G, T, P; decimal, as disks and
// `ls -h --si` count), three significant figures, so a small model's weights never print as "0.0 GB" and its
// parameters never as "0.0 M".
// Guarantees: si_prefixed(v, unit) for v < 1000 is v whole with the unit ("812 B"); otherwise the largest prefix with
// a value >= 1, with 2, 1 or 0 decimals for values below 10, 100 and 1000 ("8.12 kB", "45.2 MB", "306 M"); a value
// that rounds up to 1000 moves to the next prefix ("1.00 MB", never "1000 kB"). byte_size(b) is si_prefixed(b, "B")
// except below 1000, where it says "bytes".
#pragma once
#include <fmt/format.h>

#include <iterator>
#include <string>
#include <string_view>

namespace ddpx {

inline std::string si_prefixed(double value, std::string_view unit) {
  if (value < 999.5) return fmt::format("{:.0f} {}", value, unit);
  static constexpr const char* kPrefixes[] = {"k", "M", "G", "T", "P"};
  double scaled = value / 1e3;
  size_t prefix = 0;
  while (scaled >= 999.5 && prefix + 1 < std::size(kPrefixes)) scaled /= 1e3, ++prefix;
  const int decimals = scaled < 9.995 ? 2 : scaled < 99.95 ? 1 : 0;
  return fmt::format("{:.{}f} {}{}", scaled, decimals, kPrefixes[prefix], unit);
}

inline std::string byte_size(double bytes) {
  return bytes < 999.5 ? fmt::format("{:.0f} bytes", bytes) : si_prefixed(bytes, "B");
}

}  // namespace ddpx
