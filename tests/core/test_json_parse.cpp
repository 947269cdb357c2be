// core/json_parse.hpp: the nesting guard holds on both paths (text in memory without a callback: one linear scan,
// then nlohmann's plain parser; a stream or a callback: nlohmann's callback parser), and brackets inside strings do
// not count.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/json_parse.hpp"
#include "error_expect.hpp"

namespace ddpx {
namespace {

TEST(JsonParse, NestingDepthCountsBracketsOutsideStringsOnly) {
  EXPECT_EQ(json_nesting_depth("{}"), 1);
  EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": []}]})"), 4);
  EXPECT_EQ(json_nesting_depth(R"({"a": "[[[{{{", "b": "\"[["})"), 1);
  EXPECT_EQ(json_nesting_depth("3"), 0);
}

TEST(JsonParse, DeepNestingIsRefusedOnEveryPathAndShallowFilesParse) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  testing::expect_error([&] { parse_json(deep, "deep.json"); }, {"deep.json", "nests JSON deeper than 64 levels"});
  std::istringstream stream(deep);
  testing::expect_error([&] { parse_json(stream, "deep stream"); }, {"deep stream", "deeper than 64 levels"});
  const std::string ok = R"({"traceEvents": [{"name": "a[", "ts": 1}, {"name": "b", "ts": 2}]})";
  const nlohmann::json parsed = parse_json(ok, "ok.json");
  EXPECT_EQ(parsed["traceEvents"].size(), 2u);
  EXPECT_EQ(parsed["traceEvents"][0]["name"], "a[");
  EXPECT_THROW(parse_json(std::string("{\"a\": "), "cut.json"), nlohmann::json::parse_error);
}

}  // namespace
}  // namespace ddpx
