// CastHook: gradient compression by casting to 16 bits on the wire (PyTorch's fp16/bf16_compress_hook).
// Guarantees: each value is multiplied by 1/size() in fp32, rounded to the wire format (nearest even), summed
// over ranks in that format by the backend, and widened back into the bucket: half the bytes of fp32, with the
// 16-bit format's rounding error (fp16: ~2^-11 relative, overflow past 65504 after the division; bf16: ~2^-8).
// CPU: two loops around the collective, scratch grown once per size. CUDA: one fused kernel each way
// (cast_kernels.cu) on the communication stream, device scratch grown on the first step only.
#pragma once
#include <cstdint>
#include <vector>

#include "ddp/comm_hook.hpp"
#include "ddp/device_scratch.hpp"
#include "core/reduced_gradients.hpp"

namespace ddpx {

class CastHook : public CommHook {
 public:
  explicit CastHook(WireFormat format) : format_(format) {}
  std::string name() const override { return format_ == WireFormat::fp16 ? "fp16" : "bf16"; }
  void run(BucketView& bucket, Communicator& comm, void* stream, int64_t step) override;
  size_t wire_bytes(const BucketView& bucket, int64_t) const override { return bucket.numel() * sizeof(uint16_t); }
  // CUDA buckets: the narrowing and the collective, no widening (Note [Widening fused into the update]).
  bool leaves_result_on_wire(const BucketView& bucket) const override { return bucket.device == GradDevice::cuda; }
  ReducedGradients run_leaving_wire(BucketView& bucket, Communicator& comm, void* stream, int64_t step) override;

 private:
  WireFormat format_;
  std::vector<uint16_t> host_scratch_;
  DeviceScratch device_scratch_;
};

// CPU halves of the cast (also the reference the CUDA kernels are tested against).
void scale_to_wire_format(const float* in, uint16_t* out, size_t count, float scale, WireFormat format);
void widen_from_wire_format(const uint16_t* in, float* out, size_t count, WireFormat format);

}  // namespace ddpx
