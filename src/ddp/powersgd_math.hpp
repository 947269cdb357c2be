// PowerSgdBucketMath: the numerical steps of PowerSGD for one bucket, on the host (OpenBLAS) or a GPU (fused
// kernels, see powersgd_math_cuda.cu). Owns the bucket's error-feedback buffer E and its P, Q and packed buffers,
// in the memory of its device (so the hook can hand them to the communicator directly).
// One step, as the hook (powersgd_hook.cpp) sequences it, with M = the bucket's gradients + E:
//   orthogonalize_q, begin (E feedback, packing, P_i = M_i Q_i), all-reduce packed_and_p, orthogonalize_p,
//   compute_q (Q_i = M_i^T P_i), all-reduce q, finish (bucket = unpacked averages and P_i Q_i^T, E = M - bucket);
//   or, where the consumer reads P_i Q_i^T from the factors, compute_q_leaving_factors, all-reduce q, and no finish.
// Guarantees: every method takes the same bucket pointer within a step and touches that bucket and the owned
// buffers only; where M lives between begin and finish is the implementation's (host: in the bucket; CUDA: in E,
// the bucket keeping the raw gradients until finish). Padding between tensors is left as it is (E stays zero
// there). CUDA versions enqueue on `stream` and never synchronize the host or allocate after construction
// (set_q excepted: it copies from the host and waits), so a step can be captured in a CUDA graph; host versions
// complete before returning.
#pragma once
#include <memory>
#include <vector>

#include "comm_plan/powersgd_layout.hpp"
#include "core/low_rank.hpp"

namespace ddpx {

enum class GradDevice;  // bucket_view.hpp (C++20); this header stays C++17 for the CUDA math
class DeviceScratch;

class PowerSgdBucketMath {
 public:
  virtual ~PowerSgdBucketMath() = default;
  // The packed uncompressed tensors (uncompressed_elements) followed by P (p_elements): one all-reduce.
  virtual float* packed_and_p() = 0;
  virtual float* q() = 0;  // q_elements

  virtual void set_q(const std::vector<float>& host_q, void* stream) = 0;
  virtual void orthogonalize_q(void* stream) = 0;             // Gram-Schmidt on each Q's columns
  virtual void begin(float* bucket, void* stream) = 0;        // M = bucket + E; packed = M's vectors; P_i = M_i Q_i
  virtual void orthogonalize_p(void* stream) = 0;
  virtual void compute_q(const float* bucket, void* stream) = 0;  // Q_i = M_i^T P_i
  virtual void finish(float* bucket, void* stream) = 0;       // bucket = packed | P_i Q_i^T; E = M - bucket

  // Note [Low-rank gradients fused into the update] (ddp/comm_hook.hpp). can_leave_factors: whether this bucket
  // can end a step leaving its factors (CUDA buckets whose matrices are whole 4-element vectors, ranks <= 8).
  // compute_q_leaving_factors: compute_q, and the step's end in place of finish(): the averaged vectors into the
  // bucket while the matrices' part keeps its raw gradients; E gets the bits finish() gives it, though for the
  // matrices only as the next begin reads it (CUDA: Notes [Error feedback deferred to the next begin] and [A
  // bucket's chain, one kernel per step of it], powersgd_math_cuda.cu). The vectors' averages come from the first
  // all-reduce, so they are final here, before Q's all-reduce. low_rank_gradients(): the averaged gradients of
  // the whole bucket as pieces over the factors (device pointers, valid until the bucket's next step).
  // Note [Q's orthogonalization beside the hook's chain] (ddp/powersgd_hook.cpp): orthogonalize_q_ahead, enqueued
  // on `stream` (not the hook's) once q holds the step's averaged Q, writes the Q that the next step's begin
  // multiplies by; the next orthogonalize_q then has nothing left to do (unless set_q replaced Q meanwhile). The
  // caller orders that stream before the next begin. The bits equal orthogonalize_q's at the next step (the same
  // kernel on the same Q). Only where can_orthogonalize_q_ahead() (CUDA).
  virtual bool can_orthogonalize_q_ahead() const { return false; }
  virtual void orthogonalize_q_ahead(void* stream);

  virtual bool can_leave_factors() const { return false; }
  virtual void compute_q_leaving_factors(float* bucket, void* stream);
  virtual LowRankGradients low_rank_gradients() const;
};

// `scratch`: device memory shared by the buckets of one hook (they run one after another on one stream); the
// CUDA math grows it at construction. Unused on the host.
std::unique_ptr<PowerSgdBucketMath> make_powersgd_math(const CompressionLayout& layout, GradDevice device,
                                                       DeviceScratch& scratch);
std::unique_ptr<PowerSgdBucketMath> make_host_powersgd_math(const CompressionLayout& layout);
// Defined in CUDA builds only (powersgd_math_cuda.cu); declared in every build so that this header reads the same
// in every translation unit. Callers are compiled under DDPX_HAVE_CUDA (make_powersgd_math() is the one in ddpx).
std::unique_ptr<PowerSgdBucketMath> make_cuda_powersgd_math(const CompressionLayout& layout, DeviceScratch& scratch);

// Gram-Schmidt over the columns of a row-major [rows, cols] matrix, in place (PyTorch's _orthogonalize with
// epsilon 0, except that an all-zero column stays zero instead of becoming NaN).
void orthogonalize_columns(float* matrix, int64_t rows, int64_t cols);

}  // namespace ddpx
