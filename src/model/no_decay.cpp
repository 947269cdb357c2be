// Weight-decay exemptions (see no_decay.hpp).
#include "model/no_decay.hpp"

#include <algorithm>

namespace ddpx {

bool exempt_from_decay(const TensorSlot& tensor) {
  if (tensor.shape.size() <= 1) return true;
  const std::string& name = tensor.name;
  auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with("pos_embedding") || ends_with("class_token");
}

std::vector<BufferSpan> no_decay_spans(const FlatLayout& layout) {
  std::vector<BufferSpan> spans;
  for (const TensorSlot& tensor : layout.tensors())
    if (exempt_from_decay(tensor)) spans.push_back({tensor.offset, tensor.offset + tensor.numel});
  std::sort(spans.begin(), spans.end(), [](const BufferSpan& a, const BufferSpan& b) { return a.begin < b.begin; });
  return spans;
}

std::vector<std::string> no_decay_names(const FlatLayout& layout) {
  std::vector<std::string> names;
  for (const TensorSlot& tensor : layout.tensors())
    if (exempt_from_decay(tensor)) names.push_back(tensor.name);
  return names;
}

std::vector<BufferSpan> widened_to_vectors(const std::vector<BufferSpan>& spans, size_t multiple) {
  std::vector<BufferSpan> widened;
  for (const BufferSpan& span : spans) {
    const size_t begin = span.begin / multiple * multiple, end = (span.end + multiple - 1) / multiple * multiple;
    if (!widened.empty() && widened.back().end >= begin)
      widened.back().end = std::max(widened.back().end, end);
    else
      widened.push_back({begin, end});
  }
  return widened;
}

void for_each_decay_run(size_t begin, size_t end, const std::vector<BufferSpan>& no_decay,
                        const std::function<void(size_t, size_t, bool)>& fn) {
  size_t at = begin;
  auto span = std::lower_bound(no_decay.begin(), no_decay.end(), begin,
                               [](const BufferSpan& s, size_t value) { return s.end <= value; });
  for (; at < end && span != no_decay.end() && span->begin < end; ++span) {
    const size_t exempt_begin = std::max(span->begin, at), exempt_end = std::min(span->end, end);
    if (exempt_begin >= exempt_end) continue;
    if (at < exempt_begin) fn(at, exempt_begin, true);
    fn(exempt_begin, exempt_end, false);
    at = exempt_end;
  }
  if (at < end) fn(at, end, true);
}

}  // namespace ddpx
