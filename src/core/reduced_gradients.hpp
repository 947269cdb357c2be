// ReducedGradients: the one description of where a span's averaged gradients are when they are not fp32 values in
// their slots of the gradient buffer. The reducer's hooks produce it (ddp/comm_hook.hpp's run_leaving_wire), the
// trainer passes it on unchanged (train/step_engine.hpp's optimizer_span), the CUDA model adds the bf16-slot case
// (model_cuda/cuda_model.cpp) and the optimizer's kernels read it (kernels/optimizer.cu): one type from producer to
// consumer, so no layer translates one spelling into another by hand.
// The four cases, at most one set:
//  - a 16-bit wire (`data` set): element i of the span is data[i], bf16 or IEEE fp16 as `format` says, exactly the
//    value the hook's run() would have widened into the bucket (Note [Widening fused into the update],
//    ddp/comm_hook.hpp); 8-byte aligned. The cast hook's one buffer: overwritten by its next bucket.
//  - low-rank pieces (`low_rank.pieces` set): a PowerSGD bucket's factors (core/low_rank.hpp; Note [Low-rank
//    gradients fused into the update], ddp/comm_hook.hpp); a plain piece's gradients are in the buffer.
//  - bf16 regions in fp32 slots (`packed_bf16.regions` set): the buffer itself, where the listed regions hold bf16
//    values in the first half of their slots (Note [bf16 weight gradients in their fp32 slots],
//    model_cuda/cuda_model.hpp).
//  - none (`in_buffer()`): fp32 values in the buffer, averaged (the hook did run()'s work after all).
// Valid on the hook's stream until its next call for the bucket; a 16-bit wire only until its next call for any
// bucket, which is why the CUDA engine reads it on the hook's stream (Note [Reduced spans updated beside the hook],
// train/cuda_engine.cpp).
// Guarantees: plain structs, C++17, host and device (CUDA translation units include it); no function that needs a
// GPU.
#pragma once
#include <cstdint>

#include "core/low_rank.hpp"

namespace ddpx {

// The 16-bit formats a cast hook puts on the wire.
enum class WireFormat { fp16, bf16 };

// Regions of the fp32 gradient buffer that hold bf16 gradients packed into the first half of their slots: element
// offset + i at reinterpret_cast<const uint16_t*>(buffer + offset)[i] (offsets and numel multiples of 4, sorted,
// disjoint, counted from the buffer's start); every other element is an fp32 gradient in its slot.
struct PackedBf16Region {
  long long offset = 0, numel = 0;
};
struct PackedBf16Gradients {
  const PackedBf16Region* regions = nullptr;  // device memory, `count` regions
  int count = 0;
  long long span_begin = 0;  // the buffer element that the update's element 0 (and its `grads`) stands at
};

struct ReducedGradients {
  const uint16_t* data = nullptr;  // a 16-bit wire
  WireFormat format = WireFormat::bf16;
  LowRankGradients low_rank;        // PowerSGD's factors (offsets count from the span's first element)
  PackedBf16Gradients packed_bf16;  // bf16 regions of the fp32 buffer

  // The "none" case: the average is in the fp32 buffer.
  bool in_buffer() const {
    return data == nullptr && low_rank.pieces == nullptr && packed_bf16.regions == nullptr;
  }
  // A 16-bit wire: the hook's one buffer, overwritten by its next bucket (read it on the hook's stream).
  bool reused_by_next_bucket() const { return data != nullptr; }
};

}  // namespace ddpx
