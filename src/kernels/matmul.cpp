// cuBLASLt wrapper; see matmul.hpp. Row-major products are issued as the column-major product of the transposes:
// out^T[n,m] = op(b)^T[n,k] op(a)^T[k,m], so cuBLASLt's "A" is our b and its "B" is our a, and the bias (one
// value per column of out) is cuBLASLt's per-row bias of D.
#include "kernels/matmul.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <utility>

#include "core/error.hpp"
#include "core/cublas_check.hpp"
#include "core/cuda_check.hpp"

namespace ddpx {
namespace {

int pointer_alignment(const void* p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  int alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

constexpr int kCandidates = 16;
constexpr int kTimedRuns = 5;
constexpr float kRequiredSpeedup = 0.97f;  // another candidate must take at most 97% of the heuristic first's time

// Algorithms chosen in this process, shared by every engine (see matmul.hpp).
struct AlgorithmChoices {
  std::mutex mutex;
  std::map<std::pair<int, MatmulEngine::Key>, cublasLtMatmulAlgo_t> chosen;
};
AlgorithmChoices& algorithm_choices() {
  static AlgorithmChoices choices;
  return choices;
}

bool autotune_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("DDPX_MATMUL_AUTOTUNE");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

}  // namespace

struct MatmulEngine::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (layout_c) cublasLtMatrixLayoutDestroy(layout_c);
    if (layout_b) cublasLtMatrixLayoutDestroy(layout_b);
    if (layout_a) cublasLtMatrixLayoutDestroy(layout_a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

MatmulEngine::MatmulEngine(MatmulMode mode, size_t workspace_bytes) : mode_(mode), workspace_bytes_(workspace_bytes) {
  DDPX_CUBLAS_CHECK(cublasLtCreate(&handle_));
  if (workspace_bytes_ > 0) DDPX_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

MatmulEngine::~MatmulEngine() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

MatmulEngine::Plan& MatmulEngine::plan_for(const MatmulCall& call, cudaStream_t stream, const char* what) {
  const void* c = call.c ? call.c : call.out;
  int alignment = std::min({pointer_alignment(call.a.data), pointer_alignment(call.b.data),
                            pointer_alignment(call.out), pointer_alignment(c)});
  int flags = (call.a.transposed ? 1 : 0) | (call.b.transposed ? 2 : 0) | (call.out_fp32 ? 4 : 0) |
              (call.bias ? 8 : 0) | (call.beta != 0.f ? 16 : 0);
  Key key{call.m, call.n, call.k, call.a.ld, call.b.ld, call.ld_out, call.beta != 0.f && call.c ? 1 : 0,
          flags, alignment};
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;

  const cudaDataType_t operand_type = mode_ == MatmulMode::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cudaDataType_t out_type = call.out_fp32 ? CUDA_R_32F : operand_type;
  const cublasComputeType_t compute =
      mode_ == MatmulMode::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  auto plan = std::make_unique<Plan>();
  DDPX_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F));
  // cuBLASLt A = our b (op = transpose flag of b), cuBLASLt B = our a.
  cublasOperation_t op_a = call.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_b = call.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  DDPX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  DDPX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  cublasLtEpilogue_t epilogue = call.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  DDPX_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  if (call.bias)
    DDPX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &call.bias,
                                                     sizeof(call.bias)));
  // Column-major shapes: A = op(b)^T as stored: [n,k] (N) or [k,n] (T); B = a: [k,m] (N) or [m,k] (T).
  const uint64_t n = static_cast<uint64_t>(call.n), m = static_cast<uint64_t>(call.m),
                 k = static_cast<uint64_t>(call.k);
  DDPX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->layout_a, operand_type, call.b.transposed ? k : n,
                                               call.b.transposed ? n : k, call.b.ld));
  DDPX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->layout_b, operand_type, call.a.transposed ? m : k,
                                               call.a.transposed ? k : m, call.a.ld));
  DDPX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->layout_c, out_type, n, m, call.ld_out));

  cublasLtMatmulPreference_t preference = nullptr;
  DDPX_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  uint64_t workspace = workspace_bytes_;
  uint32_t align = static_cast<uint32_t>(alignment);
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof(workspace));
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    cublasLtMatmulPreferenceSetAttribute(preference, attribute, &align, sizeof(align));
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->layout_a, plan->layout_b,
                                                         plan->layout_c, plan->layout_c, preference, kCandidates,
                                                         results, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0)
    fail("cuBLASLt found no algorithm for matmul '{}' (m={} n={} k={}, lda={} ldb={} ldout={}, {} operands, {} "
         "output, bias {}, alignment {} B): {}",
         what, call.m, call.n, call.k, call.a.ld, call.b.ld, call.ld_out,
         mode_ == MatmulMode::bf16 ? "bf16" : "fp32", call.out_fp32 ? "fp32" : "operand-typed",
         call.bias ? "yes" : "no", alignment, detail::cublas_status_name(status));
  const std::pair<int, Key> choice_key{static_cast<int>(mode_), key};
  AlgorithmChoices& choices = algorithm_choices();
  {
    std::lock_guard<std::mutex> lock(choices.mutex);
    auto chosen = choices.chosen.find(choice_key);
    if (chosen != choices.chosen.end()) {
      plan->algo = chosen->second;
      return *plans_.emplace(key, std::move(plan)).first->second;
    }
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  DDPX_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  const bool tune = autotune_enabled() && found > 1 && capture == cudaStreamCaptureStatusNone;
  plan->algo = results[tune ? fastest_candidate(call, *plan, results, found, stream) : 0].algo;
  {
    std::lock_guard<std::mutex> lock(choices.mutex);
    plan->algo = choices.chosen.emplace(choice_key, plan->algo).first->second;  // another engine may have won
  }
  return *plans_.emplace(key, std::move(plan)).first->second;
}

int MatmulEngine::fastest_candidate(const MatmulCall& call, Plan& plan,
                                    const cublasLtMatmulHeuristicResult_t* candidates, int count,
                                    cudaStream_t stream) {
  const size_t element = call.out_fp32 || mode_ != MatmulMode::bf16 ? 4 : 2;
  const size_t bytes = element * static_cast<size_t>(call.ld_out) * static_cast<size_t>(call.m);
  void* scratch = nullptr;
  DDPX_CUDA_CHECK(cudaMalloc(&scratch, bytes));
  DDPX_CUDA_CHECK(cudaMemsetAsync(scratch, 0, bytes, stream));
  // c stays the caller's when it is a separate matrix (only read); an in-place accumulate reads the scratch.
  const void* c = (call.beta != 0.f && call.c && call.c != call.out) ? call.c : scratch;
  cudaEvent_t start = nullptr, stop = nullptr;
  DDPX_CUDA_CHECK(cudaEventCreate(&start));
  DDPX_CUDA_CHECK(cudaEventCreate(&stop));
  auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(handle_, plan.desc, &call.alpha, call.b.data, plan.layout_a, call.a.data, plan.layout_b,
                          &call.beta, c, plan.layout_c, scratch, plan.layout_c, &algo, workspace_,
                          workspace_bytes_, stream);
  };
  int best = 0;
  float first_ms = std::numeric_limits<float>::infinity(), best_ms = first_ms;
  for (int i = 0; i < count; ++i) {
    if (candidates[i].state != CUBLAS_STATUS_SUCCESS || launch(candidates[i].algo) != CUBLAS_STATUS_SUCCESS)
      continue;
    DDPX_CUDA_CHECK(cudaEventRecord(start, stream));
    bool ok = true;
    for (int r = 0; r < kTimedRuns && ok; ++r) ok = launch(candidates[i].algo) == CUBLAS_STATUS_SUCCESS;
    DDPX_CUDA_CHECK(cudaEventRecord(stop, stream));
    DDPX_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    DDPX_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (!ok) continue;
    if (i == 0) first_ms = ms;
    if (ms < best_ms) best_ms = ms, best = i;
  }
  cudaEventDestroy(stop);
  cudaEventDestroy(start);
  DDPX_CUDA_CHECK(cudaStreamSynchronize(stream));
  DDPX_CUDA_CHECK(cudaFree(scratch));
  return best_ms <= kRequiredSpeedup * first_ms ? best : 0;
}

void MatmulEngine::run(const MatmulCall& call, cudaStream_t stream, const char* what) {
  DDPX_REQUIRE(call.m > 0 && call.n > 0 && call.k > 0, "matmul '{}' has an empty shape m={} n={} k={}", what,
               call.m, call.n, call.k);
  Plan& plan = plan_for(call, stream, what);
  if (call.bias)
    DDPX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &call.bias,
                                                     sizeof(call.bias)));
  const void* c = (call.beta != 0.f && call.c) ? call.c : call.out;
  cublasStatus_t status =
      cublasLtMatmul(handle_, plan.desc, &call.alpha, call.b.data, plan.layout_a, call.a.data, plan.layout_b,
                     &call.beta, c, plan.layout_c, call.out, plan.layout_c, &plan.algo, workspace_,
                     workspace_bytes_, stream);
  if (status != CUBLAS_STATUS_SUCCESS)
    fail("cublasLtMatmul for '{}' (m={} n={} k={}) failed: {}", what, call.m, call.n, call.k,
         detail::cublas_status_name(status));
}

}  // namespace ddpx
