// PowerSgdBucketMath on the host: OpenBLAS sgemm per matrix, loops for the rest. Also the factory.
#include <cblas.h>

#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "ddp/bucket_view.hpp"
#include "ddp/powersgd_math.hpp"

namespace ddpx {

void orthogonalize_columns(float* matrix, int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j) {
    double sum_squares = 0;
    for (int64_t i = 0; i < rows; ++i) sum_squares += double(matrix[i * cols + j]) * matrix[i * cols + j];
    const float inverse_norm = sum_squares > 0 ? static_cast<float>(1.0 / std::sqrt(sum_squares)) : 0.0f;
    for (int64_t i = 0; i < rows; ++i) matrix[i * cols + j] *= inverse_norm;
    for (int64_t k = j + 1; k < cols; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += double(matrix[i * cols + j]) * matrix[i * cols + k];
      const float projection = static_cast<float>(dot);
      for (int64_t i = 0; i < rows; ++i) matrix[i * cols + k] -= projection * matrix[i * cols + j];
    }
  }
}

namespace {

class HostPowerSgdMath : public PowerSgdBucketMath {
 public:
  explicit HostPowerSgdMath(const CompressionLayout& layout)
      : layout_(layout),
        error_(layout.bucket_elements, 0.0f),
        packed_and_p_(layout.uncompressed_elements + layout.p_elements),
        q_(layout.q_elements) {}

  float* packed_and_p() override { return packed_and_p_.data(); }
  float* q() override { return q_.data(); }

  void set_q(const std::vector<float>& host_q, void*) override { q_ = host_q; }

  void orthogonalize_q(void*) override {
    for (const LowRankMatrix& m : layout_.matrices) orthogonalize_columns(q_.data() + m.q_offset, m.cols, m.rank);
  }

  // M lives in the bucket from here to finish().
  void begin(float* bucket, void*) override {
    for (size_t i = 0; i < error_.size(); ++i) error_[i] = bucket[i] += error_[i];
    float* out = packed_and_p_.data();
    for (const BucketSegment& segment : layout_.uncompressed) {
      std::memcpy(out, bucket + segment.offset, segment.numel * sizeof(float));
      out += segment.numel;
    }
    for (const LowRankMatrix& m : layout_.matrices)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m.rows), int(m.rank), int(m.cols), 1.0f,
                  bucket + m.offset, int(m.cols), q_.data() + m.q_offset, int(m.rank), 0.0f, p() + m.p_offset,
                  int(m.rank));
  }

  void orthogonalize_p(void*) override {
    for (const LowRankMatrix& m : layout_.matrices) orthogonalize_columns(p() + m.p_offset, m.rows, m.rank);
  }

  void compute_q(const float* bucket, void*) override {
    for (const LowRankMatrix& m : layout_.matrices)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(m.cols), int(m.rank), int(m.rows), 1.0f,
                  bucket + m.offset, int(m.cols), p() + m.p_offset, int(m.rank), 0.0f, q_.data() + m.q_offset,
                  int(m.rank));
  }

  void finish(float* bucket, void*) override {
    const float* in = packed_and_p_.data();
    for (const BucketSegment& segment : layout_.uncompressed) {
      std::memcpy(bucket + segment.offset, in, segment.numel * sizeof(float));
      in += segment.numel;
    }
    for (const LowRankMatrix& m : layout_.matrices)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m.rows), int(m.cols), int(m.rank), 1.0f,
                  p() + m.p_offset, int(m.rank), q_.data() + m.q_offset, int(m.rank), 0.0f, bucket + m.offset,
                  int(m.cols));
    for (size_t i = 0; i < error_.size(); ++i) error_[i] -= bucket[i];
  }

 private:
  float* p() { return packed_and_p_.data() + layout_.uncompressed_elements; }

  CompressionLayout layout_;
  std::vector<float> error_, packed_and_p_, q_;
};

}  // namespace

// Buckets that cannot leave their factors (the host's, and CUDA buckets can_leave_factors() refuses) are never
// asked to: the hook checks can_leave_factors() first.
void PowerSgdBucketMath::compute_q_leaving_factors(float*, void*) {
  DDPX_INTERNAL_FAIL("PowerSGD: compute_q_leaving_factors on a bucket whose math cannot leave its factors");
}
LowRankGradients PowerSgdBucketMath::low_rank_gradients() const {
  DDPX_INTERNAL_FAIL("PowerSGD: low_rank_gradients of a bucket whose math cannot leave its factors");
}
// Likewise for Q's orthogonalization ahead (the hook checks can_orthogonalize_q_ahead() first).
void PowerSgdBucketMath::orthogonalize_q_ahead(void*) {
  DDPX_INTERNAL_FAIL("PowerSGD: orthogonalize_q_ahead on a bucket whose math orthogonalizes Q at its step only");
}

std::unique_ptr<PowerSgdBucketMath> make_host_powersgd_math(const CompressionLayout& layout) {
  return std::make_unique<HostPowerSgdMath>(layout);
}

std::unique_ptr<PowerSgdBucketMath> make_powersgd_math(const CompressionLayout& layout, GradDevice device,
                                                       DeviceScratch& scratch) {
  if (device == GradDevice::cpu) return make_host_powersgd_math(layout);
#ifdef DDPX_HAVE_CUDA
  return make_cuda_powersgd_math(layout, scratch);
#else
  (void)scratch;
  fail("--comm-hook powersgd: the gradients are on a GPU but this ddpx was built without CUDA");
#endif
}

}  // namespace ddpx
