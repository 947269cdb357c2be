// CPU reference ViT forward/backward (see vit_cpu.hpp for the guarantees).
// Conventions inside this file: activations are row-major [tokens, features] with tokens ordered (image, position);
// a Linear layer computes Y = X W^T + b with torch's W [out, in]; parameter gradients are accumulated with +=,
// activation gradients are written with = except on the residual stream, where every branch adds into it.
// Reductions (LayerNorm statistics, softmax sums, bias gradients) accumulate in double for both T.
#include "model/vit/vit_cpu.hpp"

#include "model/cpu_layers.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace ddpx {
namespace {

using cpu_layers::gemm;
using cpu_layers::gelu;
using cpu_layers::gelu_derivative;
using cpu_layers::linear_backward;
using cpu_layers::linear_forward;

// y = LayerNorm(x) over the last dim (biased variance, like torch); x rows are x_stride apart, y is dense.
template <typename T>
void layer_norm_forward(const T* x, int64_t x_stride, int64_t rows, int64_t dim, const T* gamma, const T* beta,
                        double eps, T* y, T* mean_out, T* rstd_out) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * x_stride;
    double sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += xr[i];
    const double mean = sum / static_cast<double>(dim);
    double var = 0;
    for (int64_t i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const double rstd = 1.0 / std::sqrt(var / static_cast<double>(dim) + eps);
    T* yr = y + r * dim;
    for (int64_t i = 0; i < dim; ++i) yr[i] = static_cast<T>((xr[i] - mean) * rstd) * gamma[i] + beta[i];
    mean_out[r] = static_cast<T>(mean);
    rstd_out[r] = static_cast<T>(rstd);
  }
}

// dx += LayerNorm'(dy) (x rows and dx rows are `stride` apart, dy is dense); grad_gamma, grad_beta +=.
template <typename T>
void layer_norm_backward(const T* x, int64_t stride, int64_t rows, int64_t dim, const T* mean, const T* rstd,
                         const T* gamma, const T* dy, T* grad_gamma, T* grad_beta, T* dx) {
  std::vector<double> sum_gamma(static_cast<size_t>(dim), 0.0), sum_beta(static_cast<size_t>(dim), 0.0);
  std::vector<double> xhat(static_cast<size_t>(dim));
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * stride;
    const T* dyr = dy + r * dim;
    T* dxr = dx + r * stride;
    const double mu = mean[r], rs = rstd[r];
    double mean_dxhat = 0, mean_dxhat_xhat = 0;
    for (int64_t i = 0; i < dim; ++i) {
      xhat[i] = (xr[i] - mu) * rs;
      const double dxhat = static_cast<double>(dyr[i]) * gamma[i];
      mean_dxhat += dxhat;
      mean_dxhat_xhat += dxhat * xhat[i];
      sum_gamma[i] += static_cast<double>(dyr[i]) * xhat[i];
      sum_beta[i] += dyr[i];
    }
    mean_dxhat /= static_cast<double>(dim);
    mean_dxhat_xhat /= static_cast<double>(dim);
    for (int64_t i = 0; i < dim; ++i) {
      const double dxhat = static_cast<double>(dyr[i]) * gamma[i];
      dxr[i] += static_cast<T>(rs * (dxhat - mean_dxhat - xhat[i] * mean_dxhat_xhat));
    }
  }
  for (int64_t i = 0; i < dim; ++i) {
    grad_gamma[i] += static_cast<T>(sum_gamma[i]);
    grad_beta[i] += static_cast<T>(sum_beta[i]);
  }
}

// Rows of p[rows, cols] become softmax(rows), in place.
template <typename T>
void softmax_rows(T* p, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    T* row = p + r * cols;
    const T max = *std::max_element(row, row + cols);
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      row[j] = std::exp(row[j] - max);
      sum += row[j];
    }
    const T inv = static_cast<T>(1.0 / sum);
    for (int64_t j = 0; j < cols; ++j) row[j] *= inv;
  }
}

template <typename T>
void add_into(T* dst, const T* src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

}  // namespace

template <typename T>
double VitCpu<T>::activation_bytes(const VitConfig& c, int64_t max_batch) {
  const double B = static_cast<double>(max_batch), S = static_cast<double>(c.seq_len());
  const double D = static_cast<double>(c.hidden_dim), M = static_cast<double>(c.mlp_dim);
  const double rows = B * S;
  const double per_layer = rows * (8 * D + 2 * M + 4) + B * static_cast<double>(c.num_heads) * S * S;
  const double rest = B * static_cast<double>(c.num_patches() * c.patch_dim()) + rows * (3 * D + M) + B * (D + 2);
  return (static_cast<double>(c.num_layers) * per_layer + rest) * static_cast<double>(sizeof(T));
}

template <typename T>
VitCpu<T>::VitCpu(const VitLayout& layout, int64_t max_batch) : layout_(layout), max_batch_(max_batch) {
  DDPX_REQUIRE(max_batch >= 1, "VitCpu for model '{}': max_batch must be at least 1, got {}",
               layout.config().name, max_batch);
  const VitConfig& c = layout_.config();
  const size_t rows = static_cast<size_t>(max_batch * c.seq_len());
  const size_t D = static_cast<size_t>(c.hidden_dim), M = static_cast<size_t>(c.mlp_dim);
  const size_t S = static_cast<size_t>(c.seq_len());
  patches_.resize(static_cast<size_t>(max_batch * c.num_patches() * c.patch_dim()));
  blocks_.resize(static_cast<size_t>(c.num_layers));
  for (BlockActivations& a : blocks_) {
    a.input.resize(rows * D);
    a.ln1_mean.resize(rows);
    a.ln1_rstd.resize(rows);
    a.ln1_out.resize(rows * D);
    a.qkv.resize(rows * 3 * D);
    a.attn_probs.resize(static_cast<size_t>(max_batch * c.num_heads) * S * S);
    a.attn_out.resize(rows * D);
    a.mid.resize(rows * D);
    a.ln2_mean.resize(rows);
    a.ln2_rstd.resize(rows);
    a.ln2_out.resize(rows * D);
    a.fc1_out.resize(rows * M);
    a.gelu_out.resize(rows * M);
  }
  encoder_out_.resize(rows * D);
  final_ln_mean_.resize(static_cast<size_t>(max_batch));
  final_ln_rstd_.resize(static_cast<size_t>(max_batch));
  final_ln_out_.resize(static_cast<size_t>(max_batch) * D);
  d_residual_.resize(rows * D);
  d_wide_.resize(rows * M);
  d_narrow_.resize(rows * D);
  d_qkv_.resize(rows * 3 * D);
  d_scores_.resize(S * S);
  d_final_.resize(static_cast<size_t>(max_batch) * D);
}

template <typename T>
void VitCpu<T>::forward(const T* params, const T* images, int64_t batch, T* logits) {
  const VitConfig& c = layout_.config();
  DDPX_REQUIRE(batch >= 1 && batch <= max_batch_,
               "VitCpu forward for model '{}': batch {} is outside [1, {}]; build the VitCpu with max_batch >= {}",
               c.name, batch, max_batch_, batch);
  batch_ = batch;
  const int64_t S = c.seq_len(), D = c.hidden_dim, P = c.patch_size, side = c.patches_per_side();
  const int64_t num_patches = c.num_patches(), patch_dim = c.patch_dim(), H = c.image_size;

  // Patch vectors in conv_proj.weight's (c, ky, kx) order; patch index py * side + px, like conv output flattened.
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t py = 0; py < side; ++py)
      for (int64_t px = 0; px < side; ++px) {
        T* patch = patches_.data() + ((b * num_patches) + py * side + px) * patch_dim;
        for (int64_t ch = 0; ch < c.channels; ++ch)
          for (int64_t ky = 0; ky < P; ++ky) {
            const T* src = images + ((b * c.channels + ch) * H + py * P + ky) * H + px * P;
            std::copy(src, src + P, patch + (ch * P + ky) * P);
          }
      }

  // Tokens: [class_token, patch embeddings] + pos_embedding.
  T* x = blocks_[0].input.data();  // validate() guarantees at least one layer
  const T* conv_weight = params + layout_.conv_weight;
  const T* conv_bias = params + layout_.conv_bias;
  const T* pos = params + layout_.pos_embedding;
  const T* cls = params + layout_.class_token;
  for (int64_t b = 0; b < batch; ++b) {
    T* tokens = x + b * S * D;
    gemm(false, true, num_patches, D, patch_dim, T(1), patches_.data() + b * num_patches * patch_dim, patch_dim,
         conv_weight, patch_dim, T(0), tokens + D, D);
    for (int64_t i = 0; i < D; ++i) tokens[i] = cls[i] + pos[i];
    for (int64_t s = 1; s < S; ++s)
      for (int64_t i = 0; i < D; ++i) tokens[s * D + i] += conv_bias[i] + pos[s * D + i];
  }

  for (size_t l = 0; l < blocks_.size(); ++l) {
    T* out = l + 1 < blocks_.size() ? blocks_[l + 1].input.data() : encoder_out_.data();
    block_forward(layout_.blocks[l], params, blocks_[l], out);
  }

  // encoder.ln is applied to every token by torchvision, but only the class token reaches the head.
  layer_norm_forward(encoder_out_.data(), S * D, batch, D, params + layout_.final_ln_weight,
                     params + layout_.final_ln_bias, c.layer_norm_eps, final_ln_out_.data(), final_ln_mean_.data(),
                     final_ln_rstd_.data());
  linear_forward(final_ln_out_.data(), batch, D, params + layout_.head_weight, params + layout_.head_bias,
                 c.num_classes, logits);
}

template <typename T>
void VitCpu<T>::block_forward(const BlockOffsets& o, const T* params, BlockActivations& a, T* out) {
  const VitConfig& c = layout_.config();
  const int64_t rows = batch_ * c.seq_len(), D = c.hidden_dim, M = c.mlp_dim;
  const size_t n = static_cast<size_t>(rows * D);
  layer_norm_forward(a.input.data(), D, rows, D, params + o.ln1_weight, params + o.ln1_bias, c.layer_norm_eps,
                     a.ln1_out.data(), a.ln1_mean.data(), a.ln1_rstd.data());
  linear_forward(a.ln1_out.data(), rows, D, params + o.qkv_weight, params + o.qkv_bias, 3 * D, a.qkv.data());
  attention_forward(a);
  linear_forward(a.attn_out.data(), rows, D, params + o.proj_weight, params + o.proj_bias, D, a.mid.data());
  add_into(a.mid.data(), a.input.data(), n);
  layer_norm_forward(a.mid.data(), D, rows, D, params + o.ln2_weight, params + o.ln2_bias, c.layer_norm_eps,
                     a.ln2_out.data(), a.ln2_mean.data(), a.ln2_rstd.data());
  linear_forward(a.ln2_out.data(), rows, D, params + o.fc1_weight, params + o.fc1_bias, M, a.fc1_out.data());
  for (int64_t i = 0; i < rows * M; ++i) a.gelu_out[i] = gelu(a.fc1_out[i]);
  linear_forward(a.gelu_out.data(), rows, M, params + o.fc2_weight, params + o.fc2_bias, D, out);
  add_into(out, a.mid.data(), n);
}

template <typename T>
void VitCpu<T>::attention_forward(BlockActivations& a) {
  const VitConfig& c = layout_.config();
  const int64_t S = c.seq_len(), D = c.hidden_dim, heads = c.num_heads, hd = c.head_dim();
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(hd)));
  for (int64_t b = 0; b < batch_; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const T* q = a.qkv.data() + b * S * 3 * D + h * hd;
      const T* k = q + D;
      const T* v = q + 2 * D;
      T* probs = a.attn_probs.data() + (b * heads + h) * S * S;
      gemm(false, true, S, S, hd, scale, q, 3 * D, k, 3 * D, T(0), probs, S);
      softmax_rows(probs, S, S);
      gemm(false, false, S, hd, S, T(1), probs, S, v, 3 * D, T(0), a.attn_out.data() + b * S * D + h * hd, D);
    }
}

template <typename T>
void VitCpu<T>::backward(const T* params, const T* dlogits, T* grads,
                         const std::function<void(size_t begin, size_t end)>& on_ready) {
  const VitConfig& c = layout_.config();
  DDPX_REQUIRE(batch_ > 0, "VitCpu backward for model '{}' was called before any forward", c.name);
  const int64_t S = c.seq_len(), D = c.hidden_dim, rows = batch_ * S;
  auto ready = [&](size_t begin, size_t end) {
    if (on_ready) on_ready(begin, end);
  };

  // Head and encoder.ln (class-token rows only; every other token's gradient starts at zero).
  linear_backward(final_ln_out_.data(), batch_, D, params + layout_.head_weight, dlogits, c.num_classes,
                  grads + layout_.head_weight, grads + layout_.head_bias, d_final_.data());
  std::fill(d_residual_.begin(), d_residual_.begin() + rows * D, T(0));
  layer_norm_backward(encoder_out_.data(), S * D, batch_, D, final_ln_mean_.data(), final_ln_rstd_.data(),
                      params + layout_.final_ln_weight, d_final_.data(), grads + layout_.final_ln_weight,
                      grads + layout_.final_ln_bias, d_residual_.data());
  ready(0, layout_.head_end);

  for (size_t l = blocks_.size(); l-- > 0;) {
    block_backward(layout_.blocks[l], params, blocks_[l], grads, d_residual_.data());
    ready(layout_.blocks[l].begin, layout_.blocks[l].end);
  }

  // Embeddings: pos_embedding and class_token sum over images; conv_proj sees the patch tokens.
  const int64_t num_patches = c.num_patches(), patch_dim = c.patch_dim();
  std::vector<double> d_pos(static_cast<size_t>(S * D), 0.0), d_conv_bias(static_cast<size_t>(D), 0.0);
  for (int64_t b = 0; b < batch_; ++b) {
    const T* d_tokens = d_residual_.data() + b * S * D;
    for (int64_t i = 0; i < S * D; ++i) d_pos[i] += d_tokens[i];
    for (int64_t s = 1; s < S; ++s)
      for (int64_t i = 0; i < D; ++i) d_conv_bias[i] += d_tokens[s * D + i];
    gemm(true, false, D, patch_dim, num_patches, T(1), d_tokens + D, D,
         patches_.data() + b * num_patches * patch_dim, patch_dim, T(1), grads + layout_.conv_weight, patch_dim);
  }
  for (int64_t i = 0; i < S * D; ++i) grads[layout_.pos_embedding + i] += static_cast<T>(d_pos[i]);
  for (int64_t i = 0; i < D; ++i) {
    grads[layout_.class_token + i] += static_cast<T>(d_pos[i]);  // token 0 is the class token in every image
    grads[layout_.conv_bias + i] += static_cast<T>(d_conv_bias[i]);
  }
  ready(layout_.embedding_begin, layout_.buffer_size());
}

template <typename T>
void VitCpu<T>::block_backward(const BlockOffsets& o, const T* params, const BlockActivations& a, T* grads,
                               T* d_residual) {
  const VitConfig& c = layout_.config();
  const int64_t rows = batch_ * c.seq_len(), D = c.hidden_dim, M = c.mlp_dim;
  T* d_wide = d_wide_.data();
  T* d_narrow = d_narrow_.data();

  // MLP branch: out = mid + fc2(gelu(fc1(ln_2(mid)))).
  linear_backward(a.gelu_out.data(), rows, M, params + o.fc2_weight, d_residual, D, grads + o.fc2_weight,
                  grads + o.fc2_bias, d_wide);
  for (int64_t i = 0; i < rows * M; ++i) d_wide[i] *= gelu_derivative(a.fc1_out[i]);
  linear_backward(a.ln2_out.data(), rows, D, params + o.fc1_weight, d_wide, M, grads + o.fc1_weight,
                  grads + o.fc1_bias, d_narrow);
  layer_norm_backward(a.mid.data(), D, rows, D, a.ln2_mean.data(), a.ln2_rstd.data(), params + o.ln2_weight,
                      d_narrow, grads + o.ln2_weight, grads + o.ln2_bias, d_residual);

  // Attention branch: mid = input + out_proj(attention(in_proj(ln_1(input)))).
  linear_backward(a.attn_out.data(), rows, D, params + o.proj_weight, d_residual, D, grads + o.proj_weight,
                  grads + o.proj_bias, d_narrow);
  attention_backward(a, d_narrow, d_qkv_.data());
  linear_backward(a.ln1_out.data(), rows, D, params + o.qkv_weight, d_qkv_.data(), 3 * D, grads + o.qkv_weight,
                  grads + o.qkv_bias, d_narrow);
  layer_norm_backward(a.input.data(), D, rows, D, a.ln1_mean.data(), a.ln1_rstd.data(), params + o.ln1_weight,
                      d_narrow, grads + o.ln1_weight, grads + o.ln1_bias, d_residual);
}

template <typename T>
void VitCpu<T>::attention_backward(const BlockActivations& a, const T* d_attn_out, T* d_qkv) {
  const VitConfig& c = layout_.config();
  const int64_t S = c.seq_len(), D = c.hidden_dim, heads = c.num_heads, hd = c.head_dim();
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(hd)));
  T* d_scores = d_scores_.data();
  for (int64_t b = 0; b < batch_; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const T* q = a.qkv.data() + b * S * 3 * D + h * hd;
      const T* k = q + D;
      const T* v = q + 2 * D;
      T* dq = d_qkv + b * S * 3 * D + h * hd;
      T* dk = dq + D;
      T* dv = dq + 2 * D;
      const T* probs = a.attn_probs.data() + (b * heads + h) * S * S;
      const T* d_out = d_attn_out + b * S * D + h * hd;
      gemm(false, true, S, S, hd, T(1), d_out, D, v, 3 * D, T(0), d_scores, S);  // d probs
      gemm(true, false, S, hd, S, T(1), probs, S, d_out, D, T(0), dv, 3 * D);
      for (int64_t i = 0; i < S; ++i) {  // softmax backward, in place: ds = p * (dp - <p, dp>)
        const T* p = probs + i * S;
        T* ds = d_scores + i * S;
        double dot = 0;
        for (int64_t j = 0; j < S; ++j) dot += static_cast<double>(p[j]) * ds[j];
        for (int64_t j = 0; j < S; ++j) ds[j] = p[j] * (ds[j] - static_cast<T>(dot));
      }
      gemm(false, false, S, hd, S, scale, d_scores, S, k, 3 * D, T(0), dq, 3 * D);
      gemm(true, false, S, hd, S, scale, d_scores, S, q, 3 * D, T(0), dk, 3 * D);
    }
}

template class VitCpu<float>;
template class VitCpu<double>;

}  // namespace ddpx
