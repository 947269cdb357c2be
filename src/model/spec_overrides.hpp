// The "base:key=value,key=value" syntax every model family's spec shares (vit_l_32:layers=12,
// mlp:width=512,classes=100), read in one place.
// Guarantees: split_model_spec() cuts at the first ':' (no ':' -> no overrides); apply_spec_overrides() sets each
// named integer field (empty items are skipped) and refuses, naming the whole spec, an item that is not key=value, a
// value that is not a whole decimal integer, a key outside `fields` (listing them) and a key given twice
// (custom:image=16,image=32 once took the last).
// Ranges are the family's validate()'s to check.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

namespace ddpx {

struct SplitModelSpec {
  std::string_view base, overrides;
};
SplitModelSpec split_model_spec(std::string_view spec);

void apply_spec_overrides(std::string_view spec, std::string_view overrides,
                          std::initializer_list<std::pair<std::string_view, int64_t*>> fields);

}  // namespace ddpx
