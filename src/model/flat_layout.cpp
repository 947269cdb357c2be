// The generic flat parameter layout (see flat_layout.hpp for the guarantees).
#include "model/flat_layout.hpp"

#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx {
namespace {
size_t aligned(size_t n) { return (n + FlatLayout::kAlignElements - 1) / FlatLayout::kAlignElements * FlatLayout::kAlignElements; }
}  // namespace

FlatLayout::FlatLayout(std::string spec) : spec_(std::move(spec)) {}

size_t FlatLayout::add(std::string name, std::vector<int64_t> shape) {
  size_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<size_t>(d);
  const size_t offset = aligned(buffer_size_);
  if (!span_open_) span_begin_ = offset, span_open_ = true;
  tensors_.push_back(TensorSlot{std::move(name), std::move(shape), offset, numel});
  buffer_size_ = offset + numel;
  num_params_ += numel;
  return offset;
}

size_t FlatLayout::close_span() {
  DDPX_INTERNAL_ASSERT(span_open_, "layout of '{}': close_span() without a tensor since the last span", spec_);
  // The first span starts at 0 (nothing precedes it); later ones where their first tensor starts. The end is
  // rounded up to a multiple of kSpanGranule: the padding it takes in is zero, and the next tensor starts at a
  // multiple of kAlignElements, so the span never reaches into it.
  const size_t end = (buffer_size_ + kSpanGranule - 1) / kSpanGranule * kSpanGranule;
  ready_spans_.push_back(BufferSpan{ready_spans_.empty() ? 0 : span_begin_, end});
  span_open_ = false;
  return end;
}

void FlatLayout::finish() {
  DDPX_INTERNAL_ASSERT(!span_open_ && !ready_spans_.empty(), "layout of '{}': finish() with an open span", spec_);
  // Pad the end too, so buffers sized buffer_size() can be split into aligned halves by vectorized kernels.
  buffer_size_ = aligned(buffer_size_);
  ready_spans_.back().end = buffer_size_;
}

const TensorSlot* FlatLayout::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

const TensorSlot& FlatLayout::at(std::string_view name) const {
  const TensorSlot* t = find(name);
  DDPX_REQUIRE(t != nullptr, "model '{}' has no tensor named '{}'", spec_, name);
  return *t;
}

}  // namespace ddpx
