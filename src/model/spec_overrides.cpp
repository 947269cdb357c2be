// Model spec overrides; see spec_overrides.hpp.
#include "model/spec_overrides.hpp"

#include <fmt/format.h>

#include <charconv>
#include <set>
#include <string>

#include "core/error.hpp"

namespace ddpx {

SplitModelSpec split_model_spec(std::string_view spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return {spec, {}};
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

void apply_spec_overrides(std::string_view spec, std::string_view overrides,
                          std::initializer_list<std::pair<std::string_view, int64_t*>> fields) {
  std::set<std::string_view, std::less<>> given;
  while (!overrides.empty()) {
    const size_t comma = overrides.find(',');
    const std::string_view item = overrides.substr(0, comma);
    overrides = comma == std::string_view::npos ? std::string_view{} : overrides.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    DDPX_REQUIRE(eq != std::string_view::npos, "model spec '{}': '{}' is not key=value", spec, item);
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    DDPX_REQUIRE(ec == std::errc() && ptr == value.data() + value.size(),
                 "model spec '{}': '{}={}' is not an integer", spec, key, value);
    int64_t* field = nullptr;
    std::string known;
    for (const auto& [name, target] : fields) {
      if (name == key) field = target;
      known += (known.empty() ? "" : ", ") + std::string(name);
    }
    DDPX_REQUIRE(field != nullptr, "model spec '{}': unknown key '{}' ({})", spec, key, known);
    DDPX_REQUIRE(given.insert(key).second, "model spec '{}': key '{}' is given twice; give each key once", spec, key);
    *field = v;
  }
}

}  // namespace ddpx
