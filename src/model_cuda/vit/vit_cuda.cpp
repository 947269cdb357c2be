// VitCuda implementation; see vit_cuda.hpp for the guarantees.
// Data flow of one block (rows = batch * seq tokens, residual stream fp32, T = matmul operand type):
//   forward:  h1 = LN1(x) [T] -> qkv = h1 Wqkv^T + b [T] -> attention -> mid = x + o Wproj^T + b [fp32, the
//             residual add is the matmul's beta*C] -> h2 = LN2(mid) [T] -> f1 = h2 W1^T + b [T] -> g = GELU(f1)
//             [T] -> x' = mid + g W2^T + b [fp32].
//   backward: d_res (fp32) and its T copy carry d(x'); weight gradients are matmuls accumulating (beta = 1) into
//             the fp32 grads (or writing bf16 into their slots: Note [bf16 weight gradients in their fp32 slots],
//             cuda_model.hpp); bias gradients are deterministic column sums (in_proj's: attention backward's
//             per-image sums, then a sum over images); LN backward adds into d_res in place.
#include "model_cuda/vit/vit_cuda.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/cuda_check.hpp"
#include "core/internal_assert.hpp"
#include "kernels/attention.hpp"
#include "kernels/column_sum.hpp"
#include "kernels/gelu.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"
#include "kernels/patch_embedding.hpp"
#include "kernels/softmax_xent.hpp"
#include "kernels/transpose.hpp"
#include "model_cuda/weight_gradient_output.hpp"

namespace ddpx {

namespace {

// Carves typed, 256-byte-aligned slices out of one allocation. With base == nullptr it only measures.
class Carver {
 public:
  explicit Carver(char* base) : base_(base) {}
  template <typename U>
  U* take(int64_t count) {
    offset_ = (offset_ + 255) / 256 * 256;
    U* p = base_ ? reinterpret_cast<U*>(base_ + offset_) : nullptr;
    offset_ += static_cast<size_t>(count) * sizeof(U);
    return p;
  }
  size_t bytes() const { return offset_; }

 private:
  char* base_;
  size_t offset_ = 0;
};

template <typename T>
class VitCudaModel final : public CudaNetwork {
 public:
  VitCudaModel(const VitLayout& layout, int64_t max_batch, MatmulMode mode, cudaStream_t stream,
               const float* params, const T* weights, float* grads)
      : layout_(layout),
        config_(layout.config()),
        max_batch_(max_batch),
        stream_(stream),
        matmul_(mode),
        params_(params),
        weights_(weights),
        grads_(grads) {
    Carver measure(nullptr);
    carve(measure);
    arena_ = DeviceBuffer<char>(measure.bytes(), "the CUDA ViT's activations (" + config_.spec() + ", batch " +
                                                     std::to_string(max_batch) + ")");
    Carver assign(arena_.get());
    carve(assign);
  }

  size_t activation_bytes() const override { return arena_.bytes(); }

  void forward(const float* images, int64_t batch, float* logits) override {
    DDPX_REQUIRE(batch > 0 && batch <= max_batch_,
                 "batch {} is outside [1, {}], the maximum batch this CUDA model ({}) was built for", batch,
                 max_batch_, config_.spec());
    batch_ = batch;
    const int64_t D = config_.hidden_dim, N = config_.num_patches(), S = config_.seq_len(), K = config_.patch_dim();
    patchify<T>(images, patches_, PatchShape{batch, config_.channels, config_.image_size, config_.patch_size},
                stream_);
    MatmulCall embed;
    embed.m = batch * N, embed.n = D, embed.k = K;
    embed.a = {patches_, K, false};
    embed.b = {weights_ + layout_.conv_weight, K, true};
    embed.out = patch_embed_, embed.ld_out = D, embed.out_fp32 = true;
    embed.bias = params_ + layout_.conv_bias;
    matmul_.run(embed, stream_, "patch embedding (conv_proj) forward");
    assemble_tokens(patch_embed_, params_ + layout_.class_token, params_ + layout_.pos_embedding, residual_[0],
                    batch, N, D, stream_);
    for (size_t l = 0; l < blocks_.size(); ++l) block_forward(l);

    LayerNormForwardArgs<T> ln;
    ln.x = residual_.back(), ln.ld_x = S * D;
    ln.gamma = params_ + layout_.final_ln_weight, ln.beta = params_ + layout_.final_ln_bias;
    ln.y = final_ln_out_, ln.ld_y = D, ln.mean = final_mean_, ln.rstd = final_rstd_;
    ln.rows = batch, ln.dim = D, ln.eps = static_cast<float>(config_.layer_norm_eps);
    layernorm_forward(ln, stream_);
    MatmulCall head;
    head.m = batch, head.n = config_.num_classes, head.k = D;
    head.a = {final_ln_out_, D, false};
    head.b = {weights_ + layout_.head_weight, D, true};
    head.out = logits, head.ld_out = config_.num_classes, head.out_fp32 = true;
    head.bias = params_ + layout_.head_bias;
    matmul_.run(head, stream_, "classification head forward");
  }

  // Every weight GEMM's output tensor (Note [bf16 weight gradients in their fp32 slots], cuda_model.hpp).
  std::vector<BufferSpan> weight_gradient_slots() const override {
    const int64_t D = config_.hidden_dim, M = config_.mlp_dim, C = config_.num_classes, K = config_.patch_dim();
    auto slot = [](size_t offset, int64_t numel) { return BufferSpan{offset, offset + static_cast<size_t>(numel)}; };
    std::vector<BufferSpan> slots = {slot(layout_.head_weight, C * D), slot(layout_.conv_weight, D * K)};
    for (const BlockOffsets& o : layout_.blocks) {
      slots.push_back(slot(o.qkv_weight, 3 * D * D));
      slots.push_back(slot(o.proj_weight, D * D));
      slots.push_back(slot(o.fc1_weight, M * D));
      slots.push_back(slot(o.fc2_weight, D * M));
    }
    return slots;
  }

  void forward_backward(const float* images, const int32_t* labels, int64_t batch, float grad_scale, float* loss,
                        GradWrite write, const std::function<void(size_t, size_t)>& on_ready) override {
    writing_ = gradient_writing<T>(write.overwrite, write.bf16_weights);
    forward(images, batch, logits_);
    const int64_t D = config_.hidden_dim, S = config_.seq_len(), C = config_.num_classes, rows = batch * S;
    class_cross_entropy<T>(write.targets, logits_, labels, batch, C, grad_scale, loss, dlogits_, row_loss_, stream_);
    auto ready = [&](size_t begin, size_t end) {
      if (on_ready) on_ready(begin, end);
    };

    // Head: dW += dlogits^T h, db += colsum(dlogits), d_final = dlogits W.
    MatmulCall head_w;
    head_w.m = C, head_w.n = D, head_w.k = batch;
    head_w.a = {dlogits_, C, true};
    head_w.b = {final_ln_out_, D, false};
    weight_gradient_output(head_w, layout_.head_weight, D);
    matmul_.run(head_w, stream_, "classification head weight gradient");
    column_sum(dlogits_, C, batch, C, grads_ + layout_.head_bias);
    MatmulCall head_x;
    head_x.m = batch, head_x.n = D, head_x.k = C;
    head_x.a = {dlogits_, C, false};
    head_x.b = {weights_ + layout_.head_weight, D, false};
    head_x.out = d_final_, head_x.ld_out = D, head_x.out_fp32 = std::is_same_v<T, float>;
    matmul_.run(head_x, stream_, "classification head input gradient");

    // encoder.ln on the class-token rows; every other token's gradient starts at zero.
    DDPX_CUDA_CHECK(cudaMemsetAsync(d_res_, 0, sizeof(float) * rows * D, stream_));
    DDPX_CUDA_CHECK(cudaMemsetAsync(d_res_t_, 0, sizeof(T) * rows * D, stream_));
    LayerNormBackwardArgs<T> ln;
    ln.x = residual_.back(), ln.ld_x = S * D, ln.mean = final_mean_, ln.rstd = final_rstd_;
    ln.gamma = params_ + layout_.final_ln_weight;
    ln.dy = d_final_, ln.ld_dy = D;
    ln.dx = d_res_, ln.dx_copy = d_res_t_, ln.ld_dx = S * D, ln.accumulate = false;
    ln.dgamma = grads_ + layout_.final_ln_weight, ln.dbeta = grads_ + layout_.final_ln_bias;
    ln.dx_column_sum = grads_ + layout_.blocks.back().fc2_bias;  // d(last block output) only has class rows
    ln.overwrite_param_grads = writing_.overwrite;
    ln.rows = batch, ln.dim = D;
    ln.scratch = scratch_, ln.scratch_floats = scratch_floats_;
    layernorm_backward(ln, stream_);
    ready(0, layout_.head_end);

    for (size_t l = blocks_.size(); l-- > 0;) {
      block_backward(l);
      ready(layout_.blocks[l].begin, layout_.blocks[l].end);
    }

    // Embeddings: conv_proj sees the patch tokens; pos_embedding and class_token sum over images.
    const int64_t N = config_.num_patches(), K = config_.patch_dim();
    gather_patch_token_grads<T>(d_res_, d_patch_embed_, batch, N, D, stream_);
    MatmulCall conv_w;
    conv_w.m = D, conv_w.n = K, conv_w.k = batch * N;
    conv_w.a = {d_patch_embed_, D, true};
    conv_w.b = {patches_, K, false};
    weight_gradient_output(conv_w, layout_.conv_weight, K);
    run_weight_gradient(conv_w, "patch embedding (conv_proj) weight gradient");
    column_sum(d_patch_embed_, D, batch * N, D, grads_ + layout_.conv_bias);
    // pos_embedding's and class_token's sums, each over the batch's rows, in one kernel (the bits of one
    // column_sum_add each: a batch's rows are one split).
    ColumnSumBatch embedding_sums;
    embedding_sums.add(column_sum_args(d_res_, S * D, batch, S * D, grads_ + layout_.pos_embedding));
    embedding_sums.add(column_sum_args(d_res_, S * D, batch, D, grads_ + layout_.class_token));
    column_sum_add_batch(embedding_sums, stream_);
    ready(layout_.embedding_begin, layout_.buffer_size());
  }

 private:
  struct BlockActivations {
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd, *lse, *mid;
    T *ln1_out, *qkv, *attn_out, *ln2_out, *fc1_out, *gelu_out;
  };

  // A parameter gradient's column sum: out (+)= the sums over `rows` rows of `cols` columns of `in` (= on a
  // step whose gradients start at zero), with the shared scratch for column_sum_add's second stage.
  template <typename In>
  ColumnSumArgs<In> column_sum_args(const In* in, int64_t ld, int64_t rows, int64_t cols, float* out) const {
    ColumnSumArgs<In> args;
    args.in = in, args.ld = ld, args.rows = rows, args.cols = cols, args.outputs[0] = out;
    args.overwrite = writing_.overwrite;
    args.scratch = scratch_, args.scratch_floats = scratch_floats_;
    return args;
  }

  template <typename In>
  void column_sum(const In* in, int64_t ld, int64_t rows, int64_t cols, float* out) {
    column_sum_add(column_sum_args(in, ld, rows, cols, out), stream_);
  }

  AttentionShape attention_shape() const {
    AttentionShape shape;
    shape.batch = batch_, shape.seq = config_.seq_len(), shape.heads = config_.num_heads;
    shape.head_dim = config_.head_dim();
    shape.scale = 1.f / std::sqrt(static_cast<float>(config_.head_dim()));
    shape.tf32 = matmul_.mode() == MatmulMode::tf32;  // tf32: attention's products on TF32 tensor cores too
    return shape;
  }

  // y[rows, n] = x[rows, k] W^T (+ bias) (+ residual), W stored [n, k] like torch.nn.Linear.
  void linear(const T* x, int64_t k, size_t weight, int64_t n, size_t bias, void* y, bool y_fp32,
              const float* residual, const char* what) {
    MatmulCall call;
    call.m = batch_ * config_.seq_len(), call.n = n, call.k = k;
    call.a = {x, k, false};
    call.b = {weights_ + weight, k, true};
    call.out = y, call.ld_out = n, call.out_fp32 = y_fp32;
    call.bias = y_fp32 ? static_cast<const void*>(params_ + bias) : static_cast<const void*>(weights_ + bias);
    if (residual) call.beta = 1.f, call.c = residual;
    matmul_.run(call, stream_, what);
  }

  // grads[weight] += dy^T x (= when the grads are zero), with dy [rows, n] and x [rows, k] (both T).
  void weight_gradient(const T* dy, int64_t n, const T* x, int64_t k, size_t weight, const char* what) {
    MatmulCall call;
    call.m = n, call.n = k, call.k = batch_ * config_.seq_len();
    call.a = {dy, n, true};
    call.b = {x, k, false};
    weight_gradient_output(call, weight, k);
    run_weight_gradient(call, what);
  }

  // A weight GEMM's output: the tensor's fp32 slots (beta 1 adds, 0 writes), or in bf16 mode with
  // writing_.bf16_weights bf16 into their first half (Note [bf16 weight gradients in their fp32 slots],
  // cuda_model.hpp; CudaModel allows it only where the step writes, beta 0).
  void weight_gradient_output(MatmulCall& call, size_t weight, int64_t ld) {
    set_weight_gradient_output<T>(call, grads_, weight, ld, writing_.weight_beta, writing_.bf16_weights);
  }

  // Note [K-major TF32 weight gradients]
  // A weight gradient dy^T x reduces over the tokens, which are the slow index of both operands as the layers
  // store them. cuBLASLt's TF32 kernels on Hopper want at least one operand with the reduction contiguous
  // (K-major): measured on the H200 (bench/matmul_timing, ViT-L/32, 1600 tokens), the weight gradients run
  // 70 us as stored and 50 us with either operand transposed first, while the transpose of a 1600 x 1024 fp32
  // operand costs 9 us. So in tf32 mode, when one operand is at least 3 times as wide as the other (in_proj,
  // mlp.0, mlp.3, conv_proj), the narrower one is transposed into kmajor_ and the product reads it K-major; the
  // square out_proj (35.5 us against 27.4 + 9.1) stays as stored. A transpose is an exact copy, so only the
  // GEMM's algorithm (and with it the order of its fp32 additions) changes. bf16 products run as fast as stored
  // (within 4%), and fp32 ones are CUDA-core SGEMMs: both stay as they are.
  void run_weight_gradient(MatmulCall call, const char* what) {
    if constexpr (std::is_same_v<T, float>) {
      if (kmajor_ != nullptr) {  // allocated in tf32 mode only
        const int64_t rows = call.k, narrow = std::min(call.m, call.n), wide = std::max(call.m, call.n);
        if (wide >= 3 * narrow && rows * narrow <= kmajor_floats_) {
          if (call.m < call.n) {  // dy^T is the narrower: store it [m, rows]
            transpose(static_cast<const float*>(call.a.data), rows, call.m, call.a.ld, kmajor_, rows, stream_);
            call.a = {kmajor_, rows, false};
          } else {  // x is the narrower: store it [n, rows], i.e. b transposed
            transpose(static_cast<const float*>(call.b.data), rows, call.n, call.b.ld, kmajor_, rows, stream_);
            call.b = {kmajor_, rows, true};
          }
        }
      }
    }
    matmul_.run(call, stream_, what);
  }

  // dx[rows, k] = dy[rows, n] W, W stored [n, k].
  void input_gradient(const T* dy, int64_t n, size_t weight, int64_t k, void* dx, bool dx_fp32, const char* what) {
    MatmulCall call;
    call.m = batch_ * config_.seq_len(), call.n = k, call.k = n;
    call.a = {dy, n, false};
    call.b = {weights_ + weight, k, false};
    call.out = dx, call.ld_out = k, call.out_fp32 = dx_fp32;
    matmul_.run(call, stream_, what);
  }

  void layer_norm(const float* x, size_t weight, size_t bias, T* y, float* mean, float* rstd) {
    LayerNormForwardArgs<T> ln;
    ln.x = x, ln.ld_x = config_.hidden_dim, ln.gamma = params_ + weight, ln.beta = params_ + bias;
    ln.y = y, ln.ld_y = config_.hidden_dim, ln.mean = mean, ln.rstd = rstd;
    ln.rows = batch_ * config_.seq_len(), ln.dim = config_.hidden_dim;
    ln.eps = static_cast<float>(config_.layer_norm_eps);
    layernorm_forward(ln, stream_);
  }

  // d_res += LN backward of dy (T, [rows, D]); refreshes d_res_t; adds to `folds` the sums of the LN's parameter
  // gradients and, when dx_bias_grad is set, the column sums of the new d_res (the bias gradient of the linear
  // layer producing it), their partial rows in `scratch` (Note [A block's column sums in one kernel]).
  //
  // Note [LayerNorm's incoming gradient in the operand type]
  // Under PyTorch's bf16 autocast a LayerNorm runs in fp32 and the linear after it casts its output to bf16, so
  // the gradient reaching the LayerNorm's backward is that linear's bf16 input gradient, widened. The input
  // gradients of in_proj, mlp.0 and the head are therefore stored in T (bf16 in bf16 mode: the GEMM rounds its
  // fp32 accumulator once, as PyTorch's does) and layernorm_backward reads them as such: the same values as
  // PyTorch's, and half the bytes of an fp32 dy for the GEMM to write and the LayerNorm to read (ViT-B/16 batch
  // 256: 155 MB a LayerNorm). In fp32 and tf32 modes T is float and nothing changes.
  void layer_norm_backward(const float* x, const float* mean, const float* rstd, size_t weight, size_t bias,
                           const T* dy, float* dx_bias_grad, float* scratch, ColumnSumBatch& folds) {
    LayerNormBackwardArgs<T> ln;
    const int64_t D = config_.hidden_dim;
    ln.x = x, ln.ld_x = D, ln.mean = mean, ln.rstd = rstd, ln.gamma = params_ + weight;
    ln.dy = dy, ln.ld_dy = D, ln.dx = d_res_, ln.dx_copy = d_res_t_, ln.ld_dx = D, ln.accumulate = true;
    ln.dgamma = grads_ + weight, ln.dbeta = grads_ + bias, ln.dx_column_sum = dx_bias_grad;
    ln.overwrite_param_grads = writing_.overwrite;
    ln.rows = batch_ * config_.seq_len(), ln.dim = D;
    ln.scratch = scratch, ln.scratch_floats = fold_scratch_floats_;
    ln.fold_into = &folds;
    layernorm_backward(ln, stream_);
  }

  void block_forward(size_t l) {
    const BlockOffsets& o = layout_.blocks[l];
    BlockActivations& a = blocks_[l];
    const int64_t D = config_.hidden_dim, M = config_.mlp_dim, rows = batch_ * config_.seq_len();
    layer_norm(residual_[l], o.ln1_weight, o.ln1_bias, a.ln1_out, a.ln1_mean, a.ln1_rstd);
    linear(a.ln1_out, D, o.qkv_weight, 3 * D, o.qkv_bias, a.qkv, false, nullptr, "attention in_proj forward");
    attention_forward<T>(attention_shape(), a.qkv, a.attn_out, a.lse, stream_);
    linear(a.attn_out, D, o.proj_weight, D, o.proj_bias, a.mid, true, residual_[l], "attention out_proj forward");
    layer_norm(a.mid, o.ln2_weight, o.ln2_bias, a.ln2_out, a.ln2_mean, a.ln2_rstd);
    linear(a.ln2_out, D, o.fc1_weight, M, o.fc1_bias, a.fc1_out, false, nullptr, "mlp.0 forward");
    gelu_forward<T>(a.fc1_out, a.gelu_out, rows * M, stream_);
    linear(a.gelu_out, M, o.fc2_weight, D, o.fc2_bias, residual_[l + 1], true, a.mid, "mlp.3 forward");
  }

  // Note [A block's column sums in one kernel]
  // A block's backward has four column sums to fold: the GELU backward's partial rows (mlp.0's bias), the two
  // LayerNorms' partial rows (their weights and biases, and out_proj's and the previous block's mlp.3 bias) and
  // the attention's per-image bias rows (in_proj's bias). Each was a kernel of a few microseconds on the step's
  // critical path (ViT-L/32: 96 of them, 0.35 ms of a 9.1 ms step when all were left out, measured on the H200).
  // The producers instead add them to one ColumnSumBatch, each with its own scratch (fold_scratch_), and the block
  // ends with one column_sum_add_batch: a kernel a block instead of four (ViT-L/32 +2.4%, docs/results.md), the same
  // sums (the same bits where column_sum.hpp says: all of ViT-L/32's), every gradient of the block final before
  // ready() hands it to the reducer. The next block's producers reuse the regions only after it, in stream order.
  void block_backward(size_t l) {
    const BlockOffsets& o = layout_.blocks[l];
    const BlockActivations& a = blocks_[l];
    const int64_t D = config_.hidden_dim, M = config_.mlp_dim, rows = batch_ * config_.seq_len();
    ColumnSumBatch folds;
    // MLP: d_res holds d(block output); its column sums (mlp.3 bias gradient) were added by the LayerNorm backward
    // that produced it (encoder.ln or the next block's ln_1).
    weight_gradient(d_res_t_, D, a.gelu_out, M, o.fc2_weight, "mlp.3 weight gradient");
    input_gradient(d_res_t_, D, o.fc2_weight, M, d_wide_, false, "mlp.3 input gradient");
    gelu_backward<T>(a.fc1_out, d_wide_, rows, M, grads_ + o.fc1_bias, fold_scratch_.gelu, fold_scratch_floats_,
                     stream_, writing_.overwrite, &folds);
    weight_gradient(d_wide_, M, a.ln2_out, D, o.fc1_weight, "mlp.0 weight gradient");
    input_gradient(d_wide_, M, o.fc1_weight, D, d_narrow_, std::is_same_v<T, float>, "mlp.0 input gradient");
    layer_norm_backward(a.mid, a.ln2_mean, a.ln2_rstd, o.ln2_weight, o.ln2_bias, d_narrow_, grads_ + o.proj_bias,
                        fold_scratch_.ln_2, folds);
    // Attention: d_res now holds d(mid).
    weight_gradient(d_res_t_, D, a.attn_out, D, o.proj_weight, "attention out_proj weight gradient");
    input_gradient(d_res_t_, D, o.proj_weight, D, d_attn_, false, "attention out_proj input gradient");
    attention_backward<T>(attention_shape(), a.qkv, a.attn_out, a.lse, d_attn_, d_qkv_, d_qkv_bias_per_image_,
                          attention_scratch_, attention_scratch_bytes_, stream_);
    weight_gradient(d_qkv_, 3 * D, a.ln1_out, D, o.qkv_weight, "attention in_proj weight gradient");
    folds.add(column_sum_args(d_qkv_bias_per_image_, 3 * D, batch_, 3 * D, grads_ + o.qkv_bias));
    input_gradient(d_qkv_, 3 * D, o.qkv_weight, D, d_narrow_, std::is_same_v<T, float>,
                   "attention in_proj input gradient");
    // d(block input) is d(previous block output): its column sums are the previous block's mlp.3 bias gradient.
    layer_norm_backward(residual_[l], a.ln1_mean, a.ln1_rstd, o.ln1_weight, o.ln1_bias, d_narrow_,
                        l > 0 ? grads_ + layout_.blocks[l - 1].fc2_bias : nullptr, fold_scratch_.ln_1, folds);
    column_sum_add_batch(folds, stream_);
  }

  void carve(Carver& c) {
    const int64_t B = max_batch_, D = config_.hidden_dim, M = config_.mlp_dim, S = config_.seq_len();
    const int64_t N = config_.num_patches(), K = config_.patch_dim(), C = config_.num_classes, rows = B * S;
    const auto L = static_cast<size_t>(config_.num_layers);
    residual_.assign(L + 1, nullptr);
    blocks_.assign(L, BlockActivations{});
    for (size_t l = 0; l <= L; ++l) residual_[l] = c.take<float>(rows * D);
    for (auto& a : blocks_) {
      a.ln1_mean = c.take<float>(rows), a.ln1_rstd = c.take<float>(rows);
      a.ln2_mean = c.take<float>(rows), a.ln2_rstd = c.take<float>(rows);
      a.lse = c.take<float>(B * config_.num_heads * S);
      a.mid = c.take<float>(rows * D);
      a.ln1_out = c.take<T>(rows * D), a.qkv = c.take<T>(rows * 3 * D), a.attn_out = c.take<T>(rows * D);
      a.ln2_out = c.take<T>(rows * D), a.fc1_out = c.take<T>(rows * M), a.gelu_out = c.take<T>(rows * M);
    }
    patches_ = c.take<T>(B * N * K);
    patch_embed_ = c.take<float>(B * N * D);
    final_ln_out_ = c.take<T>(B * D);
    final_mean_ = c.take<float>(B), final_rstd_ = c.take<float>(B);
    logits_ = c.take<float>(B * C);
    row_loss_ = c.take<float>(B);
    dlogits_ = c.take<T>(B * C);
    d_final_ = c.take<T>(B * D);
    d_res_ = c.take<float>(rows * D), d_res_t_ = c.take<T>(rows * D);
    d_wide_ = c.take<T>(rows * M), d_narrow_ = c.take<T>(rows * D), d_attn_ = c.take<T>(rows * D);
    d_qkv_ = c.take<T>(rows * 3 * D);
    // Note [Attention's dS tiles in the MLP's gradient buffer]: the attention backward's scratch (ViT-B/16 at
    // batch 256: 266 MB of dS tiles, Note [dS kept for dQ] in kernels/attention_tensor_core_backward.cu) is
    // d_wide_, which holds d(mlp.0 output) only between the MLP's GELU backward and its input gradient, both
    // enqueued on stream_ before the attention backward of the same block and done with it. A buffer of its own
    // only where d_wide_ is too small (sequences longer than about 4 x head_dim).
    AttentionShape widest_attention = attention_shape();
    widest_attention.batch = B;
    const size_t attention_bytes = attention_backward_scratch_bytes<T>(widest_attention);
    const size_t wide_bytes = static_cast<size_t>(rows * M) * sizeof(T);
    attention_scratch_bytes_ = attention_bytes <= wide_bytes ? wide_bytes : attention_bytes;
    attention_scratch_ = attention_bytes <= wide_bytes
                             ? static_cast<void*>(d_wide_)
                             : static_cast<void*>(c.take<char>(static_cast<int64_t>(attention_bytes)));
    d_qkv_bias_per_image_ = c.take<float>(B * 3 * D);
    d_patch_embed_ = c.take<T>(B * N * D);
    const int64_t widest = std::max({M, 3 * D, S * D, C, 2 * D});
    scratch_floats_ = std::max({column_sum_scratch_floats(widest), layernorm_backward_scratch_floats(rows, D),
                                gelu_backward_scratch_floats(rows, M)});
    scratch_ = c.take<float>(static_cast<int64_t>(scratch_floats_));
    // Note [A block's column sums in one kernel]: the GELU's, ln_2's and ln_1's partial rows, each its own.
    fold_scratch_floats_ = std::max(layernorm_backward_scratch_floats(rows, D), gelu_backward_scratch_floats(rows, M));
    for (float** region : {&fold_scratch_.gelu, &fold_scratch_.ln_2, &fold_scratch_.ln_1})
      *region = c.take<float>(static_cast<int64_t>(fold_scratch_floats_));
    // Note [K-major TF32 weight gradients]: the narrower operand of a weight gradient, transposed (tf32 only).
    kmajor_floats_ = matmul_.mode() == MatmulMode::tf32 ? rows * D : 0;  // the narrower operand is D wide
    kmajor_ = kmajor_floats_ > 0 ? c.take<float>(kmajor_floats_) : nullptr;
  }

  const VitLayout& layout_;
  const VitConfig& config_;
  int64_t max_batch_;
  int64_t batch_ = 0;
  GradientWriting writing_;  // this forward_backward's (weight_gradient_output.hpp)
  cudaStream_t stream_;
  MatmulEngine matmul_;
  const float* params_;  // fp32 master: LayerNorm parameters, class token, position embedding, fp32-output biases
  const T* weights_;     // matmul operands and T-output biases (== params_ unless bf16)
  float* grads_;
  DeviceBuffer<char> arena_;

  std::vector<float*> residual_;  // L + 1 residual-stream states [rows, D]; residual_[0] = embedded tokens
  std::vector<BlockActivations> blocks_;
  T* patches_ = nullptr;
  float* patch_embed_ = nullptr;
  T* final_ln_out_ = nullptr;
  float *final_mean_ = nullptr, *final_rstd_ = nullptr, *logits_ = nullptr, *row_loss_ = nullptr;
  T* dlogits_ = nullptr;
  T* d_final_ = nullptr;
  float* d_res_ = nullptr;   // fp32 gradient of the residual stream
  T* d_res_t_ = nullptr;     // its T copy, the operand of the next matmuls
  T* d_wide_ = nullptr;      // [rows, M] d(gelu out) -> d(fc1 out), in place
  T* d_narrow_ = nullptr;  // [rows, D] d(LN output) (Note [LayerNorm's incoming gradient in the operand type])
  T* d_attn_ = nullptr;      // [rows, D] d(attention output)
  T* d_qkv_ = nullptr;
  float* d_qkv_bias_per_image_ = nullptr;  // [batch, 3D] per-image column sums of d_qkv (from attention backward)
  T* d_patch_embed_ = nullptr;
  float* scratch_ = nullptr;
  size_t scratch_floats_ = 0;
  // Note [A block's column sums in one kernel]: the partial rows of a block's three producers, each its own.
  struct FoldScratch {
    float* gelu = nullptr;  // the GELU backward's (mlp.0's bias)
    float* ln_2 = nullptr;  // ln_2's (its weight and bias, out_proj's bias)
    float* ln_1 = nullptr;  // ln_1's (its weight and bias, the previous block's mlp.3 bias)
  } fold_scratch_;
  size_t fold_scratch_floats_ = 0;
  void* attention_scratch_ = nullptr;  // Note [Attention's dS tiles in the MLP's gradient buffer]
  size_t attention_scratch_bytes_ = 0;
  float* kmajor_ = nullptr;  // Note [K-major TF32 weight gradients]
  int64_t kmajor_floats_ = 0;
};

}  // namespace

VitCuda::VitCuda(const VitLayout& layout, int64_t max_batch, Precision precision, cudaStream_t compute_stream)
    : NetworkModel(layout, max_batch, precision, compute_stream) {
  build_network<VitCudaModel>();  // waits for what the constructors enqueued, before the caller uploads parameters
}

}  // namespace ddpx
