// PowerSgdBucketMath on a GPU. Matrices of one shape are multiplied in one cublasSgemmBatched call (ViT buckets
// hold a few shapes repeated per block); Gram-Schmidt runs one thread block per matrix; error feedback is two
// element-wise kernels over the whole bucket. Pointer arrays are built once (they depend on the bucket pointer,
// fixed for a plan), so after the first step nothing here allocates or synchronizes: graph-capturable.
// Row-major [r, c] data is column-major [c, r] to cuBLAS; the three products are written in that view:
//   P^T = Q^T M^T (N,N)   Q^T = P^T M (N,T)   M^T = Q P^T (T,N)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <tuple>

#include "core/error.hpp"
#include "ddp/powersgd_math.hpp"

namespace ddpx {
namespace {

struct MatrixRef {
  float* data;
  int rows;
  int cols;
};

constexpr int kThreads = 256;
constexpr size_t kCublasWorkspaceBytes = size_t{4} << 20;

void check_cuda(cudaError_t status, const char* what) {
  DDPX_REQUIRE(status == cudaSuccess, "PowerSGD (CUDA): {} failed: {}", what, cudaGetErrorString(status));
}

void check_cublas(cublasStatus_t status, const char* what) {
  DDPX_REQUIRE(status == CUBLAS_STATUS_SUCCESS, "PowerSGD (CUDA): {} failed: {}", what,
               cublasGetStatusString(status));
}

__device__ float block_sum(float value, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
    if (lane == 0) shared[0] = value;
  }
  __syncthreads();
  const float total = shared[0];
  __syncthreads();
  return total;
}

// One block per matrix: Gram-Schmidt over its columns (see orthogonalize_columns for the host twin).
__global__ void orthogonalize_kernel(const MatrixRef* matrices) {
  __shared__ float shared[32];
  const MatrixRef m = matrices[blockIdx.x];
  for (int j = 0; j < m.cols; ++j) {
    float partial = 0;
    for (int i = threadIdx.x; i < m.rows; i += blockDim.x) partial += m.data[i * m.cols + j] * m.data[i * m.cols + j];
    const float sum_squares = block_sum(partial, shared);
    const float inverse_norm = sum_squares > 0 ? 1.0f / sqrtf(sum_squares) : 0.0f;
    for (int i = threadIdx.x; i < m.rows; i += blockDim.x) m.data[i * m.cols + j] *= inverse_norm;
    __syncthreads();
    for (int k = j + 1; k < m.cols; ++k) {
      partial = 0;
      for (int i = threadIdx.x; i < m.rows; i += blockDim.x) partial += m.data[i * m.cols + j] * m.data[i * m.cols + k];
      const float projection = block_sum(partial, shared);
      for (int i = threadIdx.x; i < m.rows; i += blockDim.x) m.data[i * m.cols + k] -= projection * m.data[i * m.cols + j];
      __syncthreads();
    }
  }
}

__global__ void add_error_and_save_kernel(float* __restrict__ bucket, float* __restrict__ error, size_t count) {
  size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float value = bucket[i] + error[i];
    bucket[i] = value;
    error[i] = value;
  }
}

__global__ void subtract_into_error_kernel(const float* __restrict__ bucket, float* __restrict__ error,
                                           size_t count) {
  size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += stride) error[i] -= bucket[i];
}

unsigned blocks_for(size_t count) {
  size_t blocks = (count + kThreads * 4 - 1) / (kThreads * 4);
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// Matrices of one (rows, cols, rank), multiplied together.
struct ShapeGroup {
  int rows = 0, cols = 0, rank = 0;
  std::vector<size_t> members;  // indices into layout.matrices
  float** m_pointers = nullptr;  // device arrays of members.size() pointers each
  float** p_pointers = nullptr;
  float** q_pointers = nullptr;
};

class CudaPowerSgdMath : public PowerSgdBucketMath {
 public:
  explicit CudaPowerSgdMath(const CompressionLayout& layout) : layout_(layout) {
    const size_t floats = layout.bucket_elements + layout.p_elements + layout.q_elements + layout.uncompressed_elements;
    check_cuda(cudaMalloc(&storage_, (floats ? floats : 1) * sizeof(float)), "cudaMalloc of the factors");
    check_cuda(cudaMemset(storage_, 0, (floats ? floats : 1) * sizeof(float)), "cudaMemset of the error buffer");
    error_ = storage_;
    p_ = error_ + layout.bucket_elements;
    q_ = p_ + layout.p_elements;
    packed_ = q_ + layout.q_elements;

    std::map<std::tuple<int64_t, int64_t, int64_t>, size_t> group_of_shape;
    for (size_t i = 0; i < layout.matrices.size(); ++i) {
      const LowRankMatrix& m = layout.matrices[i];
      auto [it, added] = group_of_shape.try_emplace({m.rows, m.cols, m.rank}, groups_.size());
      if (added) groups_.push_back({int(m.rows), int(m.cols), int(m.rank), {}, nullptr, nullptr, nullptr});
      groups_[it->second].members.push_back(i);
    }
    const size_t matrices = layout.matrices.size();
    check_cuda(cudaMalloc(&pointer_storage_, (3 * matrices + 1) * sizeof(float*)), "cudaMalloc of pointer arrays");
    check_cuda(cudaMalloc(&refs_, (2 * matrices + 1) * sizeof(MatrixRef)), "cudaMalloc of matrix refs");
    float** cursor = pointer_storage_;
    for (ShapeGroup& group : groups_) {
      group.m_pointers = cursor;
      group.p_pointers = cursor + group.members.size();
      group.q_pointers = cursor + 2 * group.members.size();
      cursor += 3 * group.members.size();
    }
    std::vector<MatrixRef> refs;
    for (const LowRankMatrix& m : layout.matrices) refs.push_back({p_ + m.p_offset, int(m.rows), int(m.rank)});
    for (const LowRankMatrix& m : layout.matrices) refs.push_back({q_ + m.q_offset, int(m.cols), int(m.rank)});
    if (!refs.empty())
      check_cuda(cudaMemcpy(refs_, refs.data(), refs.size() * sizeof(MatrixRef), cudaMemcpyHostToDevice),
                 "copy of matrix refs");
    check_cublas(cublasCreate(&cublas_), "cublasCreate");
    check_cuda(cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes), "cudaMalloc of the cuBLAS workspace");
    check_cublas(cublasSetWorkspace(cublas_, cublas_workspace_, kCublasWorkspaceBytes), "cublasSetWorkspace");
  }

  ~CudaPowerSgdMath() override {
    cublasDestroy(cublas_);
    cudaFree(cublas_workspace_);
    cudaFree(refs_);
    cudaFree(pointer_storage_);
    cudaFree(storage_);
  }

  float* p() override { return p_; }
  float* q() override { return q_; }
  float* packed() override { return packed_; }

  void set_q(const std::vector<float>& host_q, void* stream) override {
    check_cuda(cudaMemcpyAsync(q_, host_q.data(), host_q.size() * sizeof(float), cudaMemcpyHostToDevice,
                               as_stream(stream)),
               "upload of the initial Q");
    check_cuda(cudaStreamSynchronize(as_stream(stream)), "upload of the initial Q");  // host_q is temporary
  }

  void apply_error_feedback(float* bucket, void* stream) override {
    add_error_and_save_kernel<<<blocks_for(layout_.bucket_elements), kThreads, 0, as_stream(stream)>>>(
        bucket, error_, layout_.bucket_elements);
    check_cuda(cudaGetLastError(), "error feedback kernel");
  }

  void update_error(const float* bucket, void* stream) override {
    subtract_into_error_kernel<<<blocks_for(layout_.bucket_elements), kThreads, 0, as_stream(stream)>>>(
        bucket, error_, layout_.bucket_elements);
    check_cuda(cudaGetLastError(), "error update kernel");
  }

  void pack_uncompressed(const float* bucket, void* stream) override {
    float* out = packed_;
    for (const BucketSegment& segment : layout_.uncompressed) {
      check_cuda(cudaMemcpyAsync(out, bucket + segment.offset, segment.numel * sizeof(float),
                                 cudaMemcpyDeviceToDevice, as_stream(stream)),
                 "pack of uncompressed tensors");
      out += segment.numel;
    }
  }

  void unpack_uncompressed(float* bucket, void* stream) override {
    const float* in = packed_;
    for (const BucketSegment& segment : layout_.uncompressed) {
      check_cuda(cudaMemcpyAsync(bucket + segment.offset, in, segment.numel * sizeof(float),
                                 cudaMemcpyDeviceToDevice, as_stream(stream)),
                 "unpack of uncompressed tensors");
      in += segment.numel;
    }
  }

  void orthogonalize_q(void* stream) override { orthogonalize(refs_ + layout_.matrices.size(), stream); }
  void orthogonalize_p(void* stream) override { orthogonalize(refs_, stream); }

  void compute_p(const float* bucket, void* stream) override {
    bind(bucket);
    prepare(stream);
    const float one = 1.0f, zero = 0.0f;
    for (const ShapeGroup& g : groups_)
      check_cublas(cublasSgemmBatched(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, g.rank, g.rows, g.cols, &one, g.q_pointers,
                                      g.rank, g.m_pointers, g.cols, &zero, g.p_pointers, g.rank,
                                      int(g.members.size())),
                   "P = M Q (cublasSgemmBatched)");
  }

  void compute_q(const float* bucket, void* stream) override {
    bind(bucket);
    prepare(stream);
    const float one = 1.0f, zero = 0.0f;
    for (const ShapeGroup& g : groups_)
      check_cublas(cublasSgemmBatched(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, g.rank, g.cols, g.rows, &one, g.p_pointers,
                                      g.rank, g.m_pointers, g.cols, &zero, g.q_pointers, g.rank,
                                      int(g.members.size())),
                   "Q = M^T P (cublasSgemmBatched)");
  }

  void write_approximation(float* bucket, void* stream) override {
    bind(bucket);
    prepare(stream);
    const float one = 1.0f, zero = 0.0f;
    for (const ShapeGroup& g : groups_)
      check_cublas(cublasSgemmBatched(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, g.cols, g.rows, g.rank, &one, g.q_pointers,
                                      g.rank, g.p_pointers, g.rank, &zero, g.m_pointers, g.cols,
                                      int(g.members.size())),
                   "M = P Q^T (cublasSgemmBatched)");
  }

 private:
  void orthogonalize(const MatrixRef* refs, void* stream) {
    if (layout_.matrices.empty()) return;
    orthogonalize_kernel<<<unsigned(layout_.matrices.size()), kThreads, 0, as_stream(stream)>>>(refs);
    check_cuda(cudaGetLastError(), "orthogonalization kernel");
  }

  void prepare(void* stream) { check_cublas(cublasSetStream(cublas_, as_stream(stream)), "cublasSetStream"); }

  // Fills the batched-gemm pointer arrays for this bucket pointer (once per plan: a synchronous copy).
  void bind(const float* bucket) {
    if (bucket == bound_bucket_) return;
    std::vector<float*> pointers;
    for (const ShapeGroup& g : groups_) {
      for (size_t i : g.members) pointers.push_back(const_cast<float*>(bucket) + layout_.matrices[i].offset);
      for (size_t i : g.members) pointers.push_back(p_ + layout_.matrices[i].p_offset);
      for (size_t i : g.members) pointers.push_back(q_ + layout_.matrices[i].q_offset);
    }
    if (!pointers.empty())
      check_cuda(cudaMemcpy(pointer_storage_, pointers.data(), pointers.size() * sizeof(float*),
                            cudaMemcpyHostToDevice),
                 "copy of gemm pointer arrays");
    bound_bucket_ = bucket;
  }

  CompressionLayout layout_;
  float* storage_ = nullptr;
  float *error_ = nullptr, *p_ = nullptr, *q_ = nullptr, *packed_ = nullptr;
  std::vector<ShapeGroup> groups_;
  float** pointer_storage_ = nullptr;
  MatrixRef* refs_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
  const float* bound_bucket_ = nullptr;
};

}  // namespace

std::unique_ptr<PowerSgdBucketMath> make_cuda_powersgd_math(const CompressionLayout& layout) {
  return std::make_unique<CudaPowerSgdMath>(layout);
}

}  // namespace ddpx
