// ReadinessCursor: turns gradients that autograd makes ready in any order into the buffer-ordered spans a Reducer
// takes (ddp/reducer.hpp). See Note [Readiness from autograd, in buffer order] (distributed_data_parallel.cpp).
// No LibTorch here: tests/torch_ddp drives it over a Reducer on tests/support's fake communicator.
// Guarantees:
//  - Tensors are given in buffer order as (offset, numel), disjoint and increasing. begin_pass() makes every
//    tensor not ready and the cursor 0.
//  - mark(i) sets tensor i ready and hands the reducer the longest run of ready tensors from the cursor, as one
//    mark_ready(first's offset, last's end) (the padding between them included), then moves the cursor past it. So
//    every span reaches the reducer once, in buffer order, as soon as it and every tensor before it are ready.
//  - mark(i) of a tensor already ready this pass changes nothing and returns false (the caller names the error).
//  - set_ready(i) then advance(): several tensors made ready at once (unused parameters) reach the reducer as
//    the one longest run, as mark() of the last of them would.
//  - not_ready(): the tensors not yet ready, in buffer order.
#pragma once
#include <cstddef>
#include <vector>

#include "core/internal_assert.hpp"
#include "ddp/reducer.hpp"

namespace ddpx::torch {

class ReadinessCursor {
 public:
  struct Span {
    size_t offset = 0, numel = 0;
  };

  explicit ReadinessCursor(std::vector<Span> tensors) : tensors_(std::move(tensors)), ready_(tensors_.size(), 0) {}

  void begin_pass() {
    ready_.assign(tensors_.size(), 0);
    cursor_ = 0;
  }
  bool mark(size_t index, Reducer& reducer) {
    if (!set_ready(index)) return false;
    advance(reducer);
    return true;
  }
  bool set_ready(size_t index) {
    DDPX_INTERNAL_ASSERT(index < tensors_.size(), "ReadinessCursor: tensor {} of {}", index, tensors_.size());
    if (ready_[index]) return false;
    ready_[index] = 1;
    return true;
  }
  void advance(Reducer& reducer) {
    const size_t first = cursor_;
    while (cursor_ < tensors_.size() && ready_[cursor_]) ++cursor_;
    if (cursor_ > first)
      reducer.mark_ready(tensors_[first].offset, tensors_[cursor_ - 1].offset + tensors_[cursor_ - 1].numel);
  }
  bool ready(size_t index) const { return ready_[index] != 0; }
  size_t cursor() const { return cursor_; }  // every tensor below it has been handed to the reducer
  std::vector<size_t> not_ready() const {
    std::vector<size_t> missing;
    for (size_t i = 0; i < ready_.size(); ++i)
      if (!ready_[i]) missing.push_back(i);
    return missing;
  }

 private:
  std::vector<Span> tensors_;
  std::vector<char> ready_;
  size_t cursor_ = 0;
};

}  // namespace ddpx::torch
