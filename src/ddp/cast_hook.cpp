// CastHook: scale+cast, 16-bit sum all-reduce, widen.
#include "ddp/cast_hook.hpp"

#include "core/error.hpp"
#include "core/half_precision.hpp"
#ifdef DDPX_HAVE_CUDA
#include "ddp/cast_kernels.hpp"
#endif

namespace ddpx {

void scale_to_wire_format(const float* in, uint16_t* out, size_t count, float scale, WireFormat format) {
  if (format == WireFormat::fp16)
    for (size_t i = 0; i < count; ++i) out[i] = float_to_half(in[i] * scale);
  else
    for (size_t i = 0; i < count; ++i) out[i] = float_to_bf16(in[i] * scale);
}

void widen_from_wire_format(const uint16_t* in, float* out, size_t count, WireFormat format) {
  if (format == WireFormat::fp16)
    for (size_t i = 0; i < count; ++i) out[i] = half_to_float(in[i]);
  else
    for (size_t i = 0; i < count; ++i) out[i] = bf16_to_float(in[i]);
}

namespace {
CommDType wire_dtype(WireFormat format) { return format == WireFormat::fp16 ? CommDType::f16 : CommDType::bf16; }
}  // namespace

void CastHook::run(BucketView& bucket, Communicator& comm, void* stream, int64_t) {
  const size_t count = bucket.numel();
  const float scale = 1.0f / static_cast<float>(comm.size());
  if (bucket.device == GradDevice::cpu) {
    if (host_scratch_.size() < count) host_scratch_.resize(count);
    scale_to_wire_format(bucket.data, host_scratch_.data(), count, scale, format_);
    comm.all_reduce(host_scratch_.data(), count, wire_dtype(format_), ReduceOp::sum, stream);
    widen_from_wire_format(host_scratch_.data(), bucket.data, count, format_);
    return;
  }
#ifdef DDPX_HAVE_CUDA
  const ReducedGradients reduced = run_leaving_wire(bucket, comm, stream, 0);
  launch_widen_from_wire_format(reduced.data, bucket.data, count, format_, stream);
#else
  fail("--comm-hook {}: the gradients are on a GPU but this ddpx was built without CUDA", name());
#endif
}

ReducedGradients CastHook::run_leaving_wire(BucketView& bucket, Communicator& comm, void* stream, int64_t) {
  DDPX_INTERNAL_ASSERT(bucket.device == GradDevice::cuda, "CastHook::run_leaving_wire on a host bucket ({})",
                       bucket.index);
#ifdef DDPX_HAVE_CUDA
  const size_t count = bucket.numel();
  const float scale = 1.0f / static_cast<float>(comm.size());
  auto* scratch = static_cast<uint16_t*>(device_scratch_.reserve(count * sizeof(uint16_t)));
  launch_scale_to_wire_format(bucket.data, scratch, count, scale, format_, stream);
  comm.all_reduce(scratch, count, wire_dtype(format_), ReduceOp::sum, stream);
  return {scratch, format_};
#else
  (void)comm, (void)stream;
  fail("--comm-hook {}: the gradients are on a GPU but this ddpx was built without CUDA", name());
#endif
}

}  // namespace ddpx
