// torchvision's crop parameters and torch's antialiased bilinear resampling; see image_transform.hpp.
#include "data/image_transform.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/internal_assert.hpp"

namespace ddpx {
namespace {

// Python's round(): half to even (the default floating-point rounding mode).
int round_half_even(double x) { return static_cast<int>(std::nearbyint(x)); }

// torch.randint(low, high) for our stream: uniform in [low, high).
int uniform_int(Rng& rng, int low, int high) { return low + static_cast<int>(rng.below(static_cast<uint64_t>(high - low))); }

// Taps of one axis: output i reads source [first[i], first[i] + count[i]) with weights[i * max_taps + k].
struct AxisTaps {
  std::vector<int> first, count;
  std::vector<float> weights;
  int max_taps = 0;
};

// torch's _compute_indices_weights_aa for the bilinear filter (interp_size 2), with a source box [box0, box0+length).
AxisTaps axis_taps(int in_size, double box0, double length, int out_size) {
  AxisTaps taps;
  const double scale = length / out_size;
  const double support = scale >= 1.0 ? scale : 1.0;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  taps.max_taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.resize(static_cast<size_t>(out_size));
  taps.count.resize(static_cast<size_t>(out_size));
  taps.weights.assign(static_cast<size_t>(out_size) * static_cast<size_t>(taps.max_taps), 0.f);
  for (int i = 0; i < out_size; ++i) {
    const double center = box0 + scale * (i + 0.5);
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int count = std::min(std::max(xmax - xmin, 0), taps.max_taps);
    double total = 0;
    std::vector<double> wide(static_cast<size_t>(count));
    for (int k = 0; k < count; ++k) {
      const double x = (k + xmin - center + 0.5) * invscale;
      const double weight = std::max(0.0, 1.0 - std::fabs(x));
      wide[static_cast<size_t>(k)] = weight;
      total += weight;
    }
    taps.first[static_cast<size_t>(i)] = xmin;
    taps.count[static_cast<size_t>(i)] = count;
    for (int k = 0; k < count; ++k)
      taps.weights[static_cast<size_t>(i) * static_cast<size_t>(taps.max_taps) + static_cast<size_t>(k)] =
          static_cast<float>(total > 0 ? wide[static_cast<size_t>(k)] / total : 0.0);
  }
  return taps;
}

// Clamped to [0, 255] and rounded half to even (torch.round), without a libm call: adding and subtracting 2^23
// rounds a float in [0, 2^22] to an integer in the default rounding mode.
uint8_t to_uint8(float v) {
  const float clamped = std::min(std::max(v, 0.f), 255.f);
  return static_cast<uint8_t>((clamped + 8388608.f) - 8388608.f);
}

}  // namespace

CropBox random_resized_crop_box(int height, int width, Rng& rng, double scale_min, double scale_max,
                                double ratio_min, double ratio_max) {
  const double area = static_cast<double>(height) * width;
  const double log_min = std::log(ratio_min), log_max = std::log(ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.uniform(scale_min, scale_max);
    const double aspect = std::exp(rng.uniform(log_min, log_max));
    const int w = round_half_even(std::sqrt(target_area * aspect));
    const int h = round_half_even(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int top = uniform_int(rng, 0, height - h + 1);
      const int left = uniform_int(rng, 0, width - w + 1);
      return {static_cast<double>(top), static_cast<double>(left), static_cast<double>(h), static_cast<double>(w)};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_min) {
    h = round_half_even(w / ratio_min);
  } else if (in_ratio > ratio_max) {
    w = round_half_even(h * ratio_max);
  }
  return {static_cast<double>((height - h) / 2), static_cast<double>((width - w) / 2), static_cast<double>(h),
          static_cast<double>(w)};
}

int eval_resize_side(int size, double crop_pct) {
  // The same double division as Python's size / crop_pct, then int(): truncation toward zero.
  return static_cast<int>(static_cast<double>(size) / crop_pct);
}

CropBox center_crop_box(int height, int width, int resize, int size) {
  // torchvision's Resize(int): the shorter side becomes `resize`, the longer int(resize * long / short).
  int new_h = resize, new_w = resize;
  if (width < height) {
    new_h = static_cast<int>(static_cast<double>(resize) * height / width);
  } else if (height < width) {
    new_w = static_cast<int>(static_cast<double>(resize) * width / height);
  }
  const double scale_y = static_cast<double>(height) / new_h, scale_x = static_cast<double>(width) / new_w;
  const int top = round_half_even((new_h - size) / 2.0), left = round_half_even((new_w - size) / 2.0);
  return {top * scale_y, left * scale_x, size * scale_y, size * scale_x};
}

namespace {

// One source row through the width taps: out[x * C + ch] = sum_k w[k] * src[(first + k) * C + ch], k in order.
template <int C>
void horizontal_row(const uint8_t* src, const AxisTaps& columns, int out_width, float* dst) {
  for (int x = 0; x < out_width; ++x) {
    const int first = columns.first[static_cast<size_t>(x)], count = columns.count[static_cast<size_t>(x)];
    const float* w = columns.weights.data() + static_cast<size_t>(x) * columns.max_taps;
    const uint8_t* p = src + first * C;
    float sum[C] = {};
    for (int k = 0; k < count; ++k)
      for (int ch = 0; ch < C; ++ch) sum[ch] += w[k] * static_cast<float>(p[k * C + ch]);
    for (int ch = 0; ch < C; ++ch) dst[x * C + ch] = sum[ch];
  }
}

void horizontal_row_any(const uint8_t* src, const AxisTaps& columns, int out_width, int c, float* dst) {
  for (int x = 0; x < out_width; ++x) {
    const int first = columns.first[static_cast<size_t>(x)], count = columns.count[static_cast<size_t>(x)];
    const float* w = columns.weights.data() + static_cast<size_t>(x) * columns.max_taps;
    for (int ch = 0; ch < c; ++ch) {
      float sum = 0;
      for (int k = 0; k < count; ++k) sum += w[k] * src[(first + k) * c + ch];
      dst[x * c + ch] = sum;
    }
  }
}

}  // namespace

void resample(const ImageView& source, const CropBox& box, int out_height, int out_width, bool flip, uint8_t* out) {
  const int c = source.channels;
  const AxisTaps columns = axis_taps(source.width, box.left, box.width, out_width);
  const AxisTaps rows = axis_taps(source.height, box.top, box.height, out_height);
  // Width first, over the source rows the height pass reads; then the height pass a whole row at a time (the same
  // per-element sums, in the same tap order, vectorizable).
  const int row_begin = rows.first.front();
  int row_end = row_begin;
  for (int i = 0; i < out_height; ++i)
    row_end = std::max(row_end, rows.first[static_cast<size_t>(i)] + rows.count[static_cast<size_t>(i)]);
  const size_t row_floats = static_cast<size_t>(out_width) * static_cast<size_t>(c);
  thread_local std::vector<float> horizontal, line;
  horizontal.resize(static_cast<size_t>(row_end - row_begin) * row_floats);
  line.resize(row_floats);
  for (int y = row_begin; y < row_end; ++y) {
    const uint8_t* src = source.pixels + static_cast<int64_t>(y) * source.stride;
    float* dst = horizontal.data() + static_cast<size_t>(y - row_begin) * row_floats;
    if (c == 3) {
      horizontal_row<3>(src, columns, out_width, dst);
    } else if (c == 1) {
      horizontal_row<1>(src, columns, out_width, dst);
    } else {
      horizontal_row_any(src, columns, out_width, c, dst);
    }
  }
  for (int y = 0; y < out_height; ++y) {
    const int first = rows.first[static_cast<size_t>(y)], count = rows.count[static_cast<size_t>(y)];
    const float* w = rows.weights.data() + static_cast<size_t>(y) * rows.max_taps;
    std::fill(line.begin(), line.end(), 0.f);
    for (int k = 0; k < count; ++k) {
      const float weight = w[k];
      const float* in = horizontal.data() + static_cast<size_t>(first + k - row_begin) * row_floats;
      for (size_t i = 0; i < row_floats; ++i) line[i] += weight * in[i];
    }
    uint8_t* dst = out + static_cast<int64_t>(y) * out_width * c;
    if (!flip) {
      for (size_t i = 0; i < row_floats; ++i) dst[i] = to_uint8(line[i]);
    } else {
      for (int x = 0; x < out_width; ++x)
        for (int ch = 0; ch < c; ++ch)
          dst[(out_width - 1 - x) * c + ch] = to_uint8(line[static_cast<size_t>(x * c + ch)]);
    }
  }
}

void convert_channels(const uint8_t* in, int pixels, int from, int to, uint8_t* out) {
  DDPX_INTERNAL_ASSERT((from == 1 || from == 3) && (to == 1 || to == 3), "channels {} -> {}", from, to);
  if (from == to) {
    std::copy(in, in + static_cast<int64_t>(pixels) * from, out);
  } else if (from == 1) {
    for (int p = 0; p < pixels; ++p) out[3 * p] = out[3 * p + 1] = out[3 * p + 2] = in[p];
  } else {
    for (int p = 0; p < pixels; ++p)
      out[p] = static_cast<uint8_t>((in[3 * p] * 19595 + in[3 * p + 1] * 38470 + in[3 * p + 2] * 7471 + 0x8000) >> 16);
  }
}

}  // namespace ddpx
