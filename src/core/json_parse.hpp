// Parsing JSON that comes from files (run reports, peak tables, topologies, configs, traces, safetensors headers,
// checkpoint metadata). Guarantee: nesting deeper than kMaxJsonDepth is refused with ddpx::Error naming `what`
// ("the file", "safetensors 'w.safetensors' header", ...).
// nlohmann's parser itself is iterative, but dump() (used in error messages) and the readers recurse, so a file
// of 200,000 '[' would otherwise overflow the stack. Syntax errors still throw nlohmann::json::parse_error, which
// the callers turn into messages naming their file. Text in memory without an `extra` callback is checked by one
// linear scan and parsed without a callback: nlohmann's callback parser (3.11) searches the enclosing array for
// discarded values at the end of every object, quadratic in an array of objects (a 400k-event PyTorch trace took
// 30 s in that search alone, issue 48).
#pragma once
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/error.hpp"

namespace ddpx {

inline constexpr int kMaxJsonDepth = 64;  // our files nest at most 5 levels

// The deepest nesting of arrays and objects in `text`, brackets inside strings not counted (one pass).
inline int json_nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// `extra` (optional) sees every parse event as nlohmann's parser callback does and decides what is kept.
template <typename Input>
nlohmann::json parse_json(Input&& input, std::string_view what,
                          const nlohmann::json::parser_callback_t& extra = nullptr) {
  if constexpr (std::is_convertible_v<const Input&, std::string_view>) {
    if (!extra) {
      const std::string_view text(input);
      if (json_nesting_depth(text) > kMaxJsonDepth)
        fail("{} nests JSON deeper than {} levels, which no file ddpx reads does: it is corrupt or not the right kind "
             "of file", what, kMaxJsonDepth);
      return nlohmann::json::parse(text);
    }
  }
  const auto guard = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth > kMaxJsonDepth)
      fail("{} nests JSON deeper than {} levels, which no file ddpx reads does: it is corrupt or not the right kind "
           "of file", what, kMaxJsonDepth);
    return extra ? extra(depth, event, parsed) : true;
  };
  return nlohmann::json::parse(std::forward<Input>(input), guard);
}

// A value for an error message: compact and at most `limit` characters.
inline std::string json_excerpt(const nlohmann::json& value, size_t limit = 80) {
  std::string text = value.dump();
  if (text.size() > limit) text = text.substr(0, limit) + "...";
  return text;
}

}  // namespace ddpx
