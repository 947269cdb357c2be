// A tiny XML well-formedness checker for the SVG tests (no XML library in the build): tags balance and nest,
// attribute values are quoted, entities are the five XML ones or numeric, no raw '<' or '&' in text, exactly
// one root element. Returns "" when well-formed, else the first problem.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace ddpx::testing {

struct XmlCheck {
  std::string problem;                    // "" when well-formed
  std::map<std::string, int> tag_counts;  // element name -> number of elements
  std::vector<std::string> texts;         // text content, entities decoded
};

inline XmlCheck check_xml(const std::string& xml) {
  XmlCheck out;
  std::vector<std::string> open;
  int roots = 0;
  size_t i = 0;
  auto decode = [&](const std::string& raw, std::string& decoded) -> bool {
    static const std::map<std::string, char> entities = {
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    for (size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] == '<') return false;
      if (raw[k] != '&') {
        decoded += raw[k];
        continue;
      }
      const size_t semi = raw.find(';', k);
      if (semi == std::string::npos) return false;
      const std::string name = raw.substr(k + 1, semi - k - 1);
      if (auto it = entities.find(name); it != entities.end()) {
        decoded += it->second;
      } else if (name.size() > 1 && name[0] == '#') {
        decoded += '?';
      } else {
        return false;
      }
      k = semi;
    }
    return true;
  };
  if (xml.rfind("<?xml", 0) == 0) i = xml.find("?>") + 2;
  while (i < xml.size()) {
    const size_t lt = xml.find('<', i);
    const std::string text = xml.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    std::string decoded;
    if (!decode(text, decoded)) return {"bad text or entity: " + text.substr(0, 40), {}, {}};
    if (decoded.find_first_not_of(" \t\r\n") != std::string::npos) {
      if (open.empty()) return {"text outside the root element", {}, {}};
      out.texts.push_back(decoded);
    }
    if (lt == std::string::npos) break;
    const size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) return {"unterminated tag", {}, {}};
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (tag.rfind("/", 0) == 0) {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return {"closing </" + name + "> does not match", {}, {}};
      open.pop_back();
      continue;
    }
    const bool self_closing = !tag.empty() && tag.back() == '/';
    if (self_closing) tag.pop_back();
    const size_t name_end = tag.find_first_of(" \t\n");
    const std::string name = tag.substr(0, name_end);
    if (name.empty()) return {"empty tag name", {}, {}};
    // Attributes: name="value" pairs, values without '<', entities valid.
    size_t k = name_end == std::string::npos ? tag.size() : name_end;
    while (k < tag.size()) {
      k = tag.find_first_not_of(" \t\n", k);
      if (k == std::string::npos) break;
      const size_t eq = tag.find('=', k);
      if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"')
        return {"unquoted attribute in <" + name + ">", {}, {}};
      const size_t close = tag.find('"', eq + 2);
      if (close == std::string::npos) return {"unterminated attribute in <" + name + ">", {}, {}};
      std::string value;
      if (!decode(tag.substr(eq + 2, close - eq - 2), value)) return {"bad attribute value in <" + name + ">", {}, {}};
      k = close + 1;
    }
    if (open.empty() && ++roots > 1) return {"more than one root element", {}, {}};
    ++out.tag_counts[name];
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return {"unclosed <" + open.back() + ">", {}, {}};
  if (roots != 1) return {"no root element", {}, {}};
  return out;
}

}  // namespace ddpx::testing
