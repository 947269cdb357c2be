// Reading JSON fields with messages that name the field: every from_json of report/, analysis/, topology/, tune/.
// Guarantees:
//  - A missing required field or a value of the wrong type throws ddpx::Error naming the field and the record it
//    belongs to ("step record: field 'forward_ms' must be a number, got \"abc\""), never nlohmann's generic
//    exception text alone.
//  - A record's field table (a std::tuple of field() rows) is both its reading and its writing: read_fields()
//    reads the rows in table order (so the first bad field is the one reported) and write_fields() writes an
//    object of the rows, each key once, leaving out Write::unless_default rows at their default (empty text or
//    list, false, 0) and Write::by_hand rows (the record's to_json writes those itself).
#pragma once
#include <nlohmann/json.hpp>

#include <concepts>
#include <cstdint>
#include <limits>
#include <tuple>
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

enum class Read { required, optional };
enum class Write { always, unless_default, by_hand };

// One row of a record's field table: the JSON key and the member it holds.
template <typename Record, typename T>
struct Field {
  const char* key;
  T Record::*member;
  Read read;
  Write write;
};

template <typename Record, typename T>
constexpr Field<Record, T> field(const char* key, T Record::*member, Read read = Read::required,
                                 Write write = Write::always) {
  return {key, member, read, write};
}

// A default value as Write::unless_default means it: empty text or list, false, 0.
template <typename T>
bool is_default(const T& value) {
  if constexpr (requires { value.empty(); }) {
    return value.empty();
  } else if constexpr (std::equality_comparable<T>) {
    return value == T{};
  } else {
    return false;
  }
}

// Calls visit(row) for every row of the table, in order.
template <typename Fields, typename Visit>
void for_each_field(const Fields& fields, Visit&& visit) {
  std::apply([&](const auto&... row) { (visit(row), ...); }, fields);
}

template <typename Record, typename Fields>
void read_fields(const nlohmann::json& j, const char* record, Record& v, const Fields& fields) {
  for_each_field(fields, [&](const auto& row) {
    if (row.read == Read::required) {
      require(j, record, row.key, v.*row.member);
    } else {
      optional(j, record, row.key, v.*row.member);
    }
  });
}

// j becomes an object holding the table's rows (replacing what j held).
template <typename Record, typename Fields>
void write_fields(nlohmann::json& j, const Record& v, const Fields& fields) {
  j = nlohmann::json::object();
  for_each_field(fields, [&](const auto& row) {
    if (row.write == Write::by_hand || (row.write == Write::unless_default && is_default(v.*row.member))) return;
    j[row.key] = v.*row.member;
  });
}

}  // namespace ddpx::json_fields
