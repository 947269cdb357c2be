// FlatLayout: where every parameter tensor of a model lives inside one flat buffer, and which spans of that buffer
// become final together during the backward pass. The currency of io (checkpoints, weights), ddp (the reducer's
// tensors) and train: none of them knows which model family built it.
// Guarantees:
//  - Tensors are appended in the order the family's backward pass finalizes their gradients (the family's
//    layout documents that order), so the gradients final at any point of the backward pass form a prefix of the
//    buffer, and ready_spans() lists those prefixes' increments in buffer order.
//  - Every tensor starts at a multiple of kAlignElements (256 bytes in fp32, 128 in bf16), as cuBLASLt and
//    vectorized kernels want; after finish() the buffer's end is aligned too. The gaps are padding that stays 0.
//    buffer_size() >= num_params().
//  - ready_spans() are disjoint, in increasing order, start at 0 and end at buffer_size(); every tensor lies inside
//    exactly one span. Models announce exactly these spans, in this order, from their backward pass. Span bounds
//    are multiples of kSpanGranule (4: the vectorized optimizer kernels update spans of 4-element groups, and an
//    optimizer may update each span as soon as it is announced); a span's end may take in a few padding elements,
//    which are zero and stay zero under every update.
//  - spec() is the model spec string that rebuilds this layout through the registry (model/model_registry.hpp);
//    checkpoints and weight files record it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

struct TensorSlot {
  std::string name;            // the reference framework's state_dict name, e.g. "heads.head.weight"
  std::vector<int64_t> shape;  // the reference framework's shape
  size_t offset = 0;           // in elements from the start of the flat buffer
  size_t numel = 0;
};

// [begin, end) of the flat buffer, in elements.
struct BufferSpan {
  size_t begin = 0, end = 0;
  bool operator==(const BufferSpan&) const = default;
};

class FlatLayout {
 public:
  static constexpr size_t kAlignElements = 64;
  static constexpr size_t kSpanGranule = 4;

  explicit FlatLayout(std::string spec);

  const std::string& spec() const { return spec_; }
  const std::vector<TensorSlot>& tensors() const { return tensors_; }
  size_t buffer_size() const { return buffer_size_; }  // elements, padding included
  size_t num_params() const { return num_params_; }    // elements, padding excluded
  const std::vector<BufferSpan>& ready_spans() const { return ready_spans_; }

  // nullptr if no tensor has that name.
  const TensorSlot* find(std::string_view name) const;
  // Throws ddpx::Error naming the model and the tensor when it does not exist.
  const TensorSlot& at(std::string_view name) const;

 protected:
  // Building (by a family's layout): add() appends a tensor at the next aligned offset and returns that offset;
  // close_span() ends the current ready span after the last tensor added; finish() pads the end and extends the
  // last span to it. A family calls close_span() after each group and finish() once, last.
  size_t add(std::string name, std::vector<int64_t> shape);
  size_t close_span();  // returns the span's end (the end of the last tensor, up to a multiple of kSpanGranule)
  void finish();

 private:
  std::string spec_;
  std::vector<TensorSlot> tensors_;
  std::vector<BufferSpan> ready_spans_;
  size_t span_begin_ = 0;  // offset of the first tensor of the open span
  bool span_open_ = false;
  size_t buffer_size_ = 0;
  size_t num_params_ = 0;
};

}  // namespace ddpx
