// Reading JSON fields with messages that name the field: every from_json of report/, analysis/, topology/, tune/.
// Guarantee: a missing required field or a value of the wrong type throws ddpx::Error naming the field and the
// record it belongs to ("step record: field 'forward_ms' must be a number, got \"abc\""), never nlohmann's
// generic exception text alone.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/error.hpp"
#include "core/json_parse.hpp"

namespace ddpx::json_fields {

template <typename T>
void read_value(const nlohmann::json& value, const char* record, const char* key, T& out) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann would truncate 4.7 to 4 and wrap 2^40 into an int: a count must be a whole number that fits.
    bool fits = false;
    if (value.is_number_unsigned()) {
      fits = value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    } else if (value.is_number_integer()) {
      const int64_t v = value.get<int64_t>();
      fits = v < 0 ? std::is_signed_v<T> && v >= static_cast<int64_t>(std::numeric_limits<T>::min())
                   : static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    }
    DDPX_REQUIRE(fits, "{}: field '{}' must be a whole number within [{}, {}], got {}", record, key,
                 std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), json_excerpt(value));
  }
  try {
    value.get_to(out);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: field '{}' has the wrong type (value {}): {}", record, key, json_excerpt(value), e.what());
  }
}

// Field that must be present.
template <typename T>
void require(const nlohmann::json& j, const char* record, const char* key, T& out) {
  DDPX_REQUIRE(j.is_object(), "{}: expected a JSON object, got {}", record, json_excerpt(j));
  auto it = j.find(key);
  DDPX_REQUIRE(it != j.end(), "{}: missing field '{}'", record, key);
  read_value(*it, record, key, out);
}

// Field that keeps its default when absent (or null).
template <typename T>
void optional(const nlohmann::json& j, const char* record, const char* key, T& out) {
  DDPX_REQUIRE(j.is_object(), "{}: expected a JSON object, got {}", record, json_excerpt(j));
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  read_value(*it, record, key, out);
}

}  // namespace ddpx::json_fields
