// Reading JSON fields with messages that name the field: used by every from_json in profile/.
// Guarantee: a missing required field or a value of the wrong type throws ddpx::Error naming the field and the
// record it belongs to ("step record: field 'forward_ms' must be a number, got \"abc\""), never nlohmann's
// generic exception text alone.
#pragma once
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_parse.hpp"

namespace ddpx::json_fields {

template <typename T>
void read_value(const nlohmann::json& value, const char* record, const char* key, T& out) {
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
