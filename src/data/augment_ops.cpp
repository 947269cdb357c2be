// torchvision's augmentation ops on uint8 HWC images; see augment_ops.hpp.
//
// Note [torch's linspace in float32]
// The ops' magnitudes are torch.linspace(0, max, bins) in float32 (31 bins for RandAugment and TrivialAugmentWide,
// 10 for AutoAugment), and torch 1.13's CPU kernel does not compute start + i * step: it computes `step = (end - start) / (steps - 1)` in float, then (AVX2 build) fills 16 values at
// a time as two vectors of 8 whose lanes are base + k * step (k * step rounded, then the sum), base being the
// scalar formula at the vector's first index; the rest one by one with the scalar formula, which the compiler
// contracts into one fused multiply-add: fma(step, i, start) below steps / 2, fma(-step, steps - 1 - i, end) from
// there. float(150 / 331 * 224 * 9 / 30) differs from that table's entry in the last bit, and int() of a translate
// near an integer follows it, hence the emulation (tools/make_rand_augment_fixtures.py dumps torch's tables; the
// test compares them all).
//
// Note [Where the augmentation ops can differ from torchvision]
// The geometric ops are F.affine / F.rotate on a tensor: the inverse matrix in double (Python's math), cast to
// float32, divided by (w/2, h/2), multiplied with the pixel-centre grid [x, y, 1] by a float32 GEMM, and
// grid_sample(nearest, zeros, align_corners=False) unnormalizes ((g + 1) * size / 2 - 0.5) and rounds half to
// even. The GEMM is OpenBLAS's sgemm here: x * a, then fma(y, b, that), then + c, which sample_positions() does;
// with that order every pixel of every fixture equals torchvision's. Another BLAS (MKL, a GPU) rounds the products
// differently, which moves a sampling position by about 1e-5 pixel: only a position within that of a half-pixel
// tie can pick the neighbouring pixel there, so torchvision itself differs between BLAS builds at those pixels. The
// test's fixtures come from Debian's torch 1.13 on OpenBLAS and are compared byte for byte (also checked while
// writing this: all 31 bins, both signs, every op on 224 x 224 and 160 x 200 photographs and noise, 1,869 images,
// every byte equal; the fixtures of TrivialAugmentWide's wide magnitudes, rotations to 135 degrees and shears to
// 0.99, and of AutoAugment's 10-bin ones, tools/make_auto_augment_fixtures.py, are equal byte for byte too). This
// file is compiled with -ffp-contract=off so the compiler fuses nothing the formulas do not.
#include "data/augment_ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "core/internal_assert.hpp"

namespace ddpx {
namespace {

constexpr double kPi = 3.141592653589793;
constexpr double kDegreesToRadians = kPi / 180.0;  // CPython's math.radians factor
constexpr double kRadiansToDegrees = 180.0 / kPi;  // math.degrees

// torch.linspace(start, end, steps)[i] in float32, as torch 1.13's CPU kernel computes it (Note above).
float torch_linspace_at(double start_in, double end_in, int steps, int i) {
  const float start = static_cast<float>(start_in), end = static_cast<float>(end_in);
  if (steps == 1) return start;
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  auto scalar = [&](int j) {
    return j < halfway ? std::fma(step, static_cast<float>(j), start)
                       : std::fma(-step, static_cast<float>(steps - j - 1), end);
  };
  constexpr int kLanes = 8;
  const int vectorized = steps / (2 * kLanes) * (2 * kLanes);
  if (i >= vectorized) return scalar(i);
  const int first = i / kLanes * kLanes;
  const float lane = static_cast<float>(i - first) * step;
  return scalar(first) + lane;
}

// Clamp to [0, 255] then truncate, as (...).clamp(0, 255).to(torch.uint8).
uint8_t clamp_truncate(float v) { return static_cast<uint8_t>(std::min(std::max(v, 0.f), 255.f)); }

// Round half to even without a libm call (the default rounding mode), |v| < 2^22.
float round_half_even(float v) {
  constexpr float kMagic = 12582912.f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

// _blend(img1, img2, ratio) = (ratio * img1 + (1 - ratio) * img2).clamp(0, 255).to(uint8), float32, as two
// per-value tables: out = clamp_truncate(first[img1] + second[img2]).
struct BlendTables {
  std::array<float, 256> first, second;
  explicit BlendTables(double ratio) {
    const float r = static_cast<float>(ratio), rest = static_cast<float>(1.0 - ratio);
    for (int v = 0; v < 256; ++v) {
      first[static_cast<size_t>(v)] = r * static_cast<float>(v);
      second[static_cast<size_t>(v)] = rest * static_cast<float>(v);
    }
  }
  uint8_t operator()(uint8_t a, uint8_t b) const { return clamp_truncate(first[a] + second[b]); }
};

void apply_table(const std::array<uint8_t, 256>& table, uint8_t* pixels, int64_t count, int stride, int offset) {
  for (int64_t p = 0; p < count; ++p) {
    uint8_t& v = pixels[p * stride + offset];
    v = table[v];
  }
}

// torchvision's rgb_to_grayscale on uint8: (0.2989 r + 0.587 g + 0.114 b).to(uint8), float32, left to right; each
// product from a table (the same float32 products).
struct GrayTables {
  std::array<float, 256> r, g, b;
  GrayTables() {
    for (int v = 0; v < 256; ++v) {
      r[static_cast<size_t>(v)] = 0.2989f * static_cast<float>(v);
      g[static_cast<size_t>(v)] = 0.587f * static_cast<float>(v);
      b[static_cast<size_t>(v)] = 0.114f * static_cast<float>(v);
    }
  }
  uint8_t operator()(const uint8_t* rgb) const { return static_cast<uint8_t>((r[rgb[0]] + g[rgb[1]]) + b[rgb[2]]); }
};
const GrayTables& tensor_gray() {
  static const GrayTables tables;
  return tables;
}

// functional._get_inverse_affine_matrix(center, angle, translate, scale=1, shear), in Python's double order.
std::array<double, 6> inverse_affine_matrix(double cx, double cy, double angle, double tx, double ty,
                                            double shear_x, double shear_y) {
  const double rot = angle * kDegreesToRadians, sx = shear_x * kDegreesToRadians, sy = shear_y * kDegreesToRadians;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m = {d, -b, 0.0, -c, a, 0.0};  // divided by scale 1
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

// grid_sample's source index along one axis for grid value g: round((g + 1) * size / 2 - 0.5), half to even.
int source_index(float g, float half_size) { return static_cast<int>(round_half_even((g + 1.f) * half_size - 0.5f)); }

// The grid's affine map divided by (w/2, h/2) (_gen_affine_grid's rescaled_theta), in float32.
struct GridMap {
  float ax, bx, cx, ay, by, cy;  // gx = x ax + y bx + cx, gy = x ay + y by + cy
  float half_w, half_h;          // grid_sample's size / 2
};

// One row's source pixels (height * width, a zero pixel past the image, where the position falls outside): the
// float32 GEMM in sgemm's order, x * a, then fused y * b, then + c; then grid_sample's unnormalize and round.
// Branch-free so it vectorizes; compiled twice on x86-64 (with hardware FMA, and without, where std::fma is libm's
// exact fma): the same results, the first several times faster.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void source_row(const GridMap& map, float y, int width, int height, int* source) {
  const float x0 = static_cast<float>(-width * 0.5 + 0.5);
  const int outside = height * width;
  for (int i = 0; i < width; ++i) {
    const float x = static_cast<float>(i) + x0;
    const float gx = std::fma(y, map.bx, x * map.ax) + map.cx;
    const float gy = std::fma(y, map.by, x * map.ay) + map.cy;
    const int sx = source_index(gx, map.half_w), sy = source_index(gy, map.half_h);
    const bool inside = static_cast<unsigned>(sx) < static_cast<unsigned>(width) &&
                        static_cast<unsigned>(sy) < static_cast<unsigned>(height);
    source[i] = inside ? sy * width + sx : outside;
  }
}

// F_t.affine / F_t.rotate (expand=False) with nearest sampling and zero padding, from `src` (with a zero pixel
// after its last) into `dst`.
template <int C>
void warp_nearest(const std::array<double, 6>& matrix, const uint8_t* src, uint8_t* dst, int height, int width) {
  std::array<float, 6> theta{};
  for (size_t k = 0; k < 6; ++k) theta[k] = static_cast<float>(matrix[k]);
  const float half_w = static_cast<float>(0.5 * width), half_h = static_cast<float>(0.5 * height);
  // rescaled_theta = theta^T / [w/2, h/2]: the grid's x column from theta's first row, y from the second.
  const GridMap map{theta[0] / half_w, theta[1] / half_w, theta[2] / half_w,
                    theta[3] / half_h, theta[4] / half_h, theta[5] / half_h,
                    static_cast<float>(width) / 2,  static_cast<float>(height) / 2};
  thread_local std::vector<int> source;
  source.resize(static_cast<size_t>(width));
  const float y0 = static_cast<float>(-height * 0.5 + 0.5);
  for (int j = 0; j < height; ++j) {
    source_row(map, static_cast<float>(j) + y0, width, height, source.data());
    uint8_t* out = dst + static_cast<size_t>(j) * static_cast<size_t>(width) * C;
    for (int i = 0; i < width; ++i) {
      const uint8_t* s = src + static_cast<size_t>(source[static_cast<size_t>(i)]) * C;
      for (int ch = 0; ch < C; ++ch) out[i * C + ch] = s[ch];
    }
  }
}

void warp_in_place(const std::array<double, 6>& matrix, uint8_t* pixels, int height, int width, int channels,
                   std::vector<uint8_t>& scratch) {
  const size_t bytes = static_cast<size_t>(height) * static_cast<size_t>(width) * static_cast<size_t>(channels);
  scratch.assign(pixels, pixels + bytes);
  scratch.resize(bytes + static_cast<size_t>(channels), 0);  // the zero pixel outside positions read
  if (channels == 3) {
    warp_nearest<3>(matrix, scratch.data(), pixels, height, width);
  } else {
    warp_nearest<1>(matrix, scratch.data(), pixels, height, width);
  }
}

void brightness(double factor, uint8_t* pixels, int64_t values) {
  const BlendTables blend(factor);
  std::array<uint8_t, 256> table{};
  for (int v = 0; v < 256; ++v) table[static_cast<size_t>(v)] = blend(static_cast<uint8_t>(v), 0);
  apply_table(table, pixels, values, 1, 0);
}

void color(double factor, uint8_t* pixels, int64_t count, int channels) {
  if (channels == 1) return;  // adjust_saturation leaves a one-channel image as it is (PIL's behaviour)
  const BlendTables blend(factor);
  const GrayTables& gray_of = tensor_gray();
  for (int64_t p = 0; p < count; ++p) {
    uint8_t* rgb = pixels + p * 3;
    const uint8_t gray = gray_of(rgb);
    for (int ch = 0; ch < 3; ++ch) rgb[ch] = blend(rgb[ch], gray);
  }
}

void contrast(double factor, uint8_t* pixels, int64_t count, int channels) {
  // mean of the (gray) image in float32: the sum of integers is exact below 2^24 (see the header).
  uint64_t sum = 0;
  const GrayTables& gray_of = tensor_gray();
  for (int64_t p = 0; p < count; ++p) sum += channels == 3 ? gray_of(pixels + p * 3) : pixels[p];
  const float mean = static_cast<float>(sum) / static_cast<float>(count);
  const float r = static_cast<float>(factor), rest = static_cast<float>(1.0 - factor);
  const float mean_part = rest * mean;
  std::array<uint8_t, 256> table{};
  for (int v = 0; v < 256; ++v) table[static_cast<size_t>(v)] = clamp_truncate(r * static_cast<float>(v) + mean_part);
  apply_table(table, pixels, count * channels, 1, 0);
}

void sharpness(double factor, uint8_t* pixels, int height, int width, int channels, std::vector<uint8_t>& scratch) {
  if (height <= 2 || width <= 2) return;
  const int64_t row = static_cast<int64_t>(width) * channels;
  scratch.assign(pixels, pixels + row * height);
  const BlendTables blend(factor);
  // The border keeps the original pixel, but still goes through the blend (blend(v, v) is not always v).
  auto keep = [&](int64_t from, int64_t to) {
    for (int64_t at = from; at < to; ++at) pixels[at] = blend(scratch[static_cast<size_t>(at)], scratch[static_cast<size_t>(at)]);
  };
  keep(0, row);
  keep((height - 1) * row, height * row);
  std::vector<uint8_t> blurred(static_cast<size_t>(row));
  for (int y = 1; y < height - 1; ++y) {
    const uint8_t* above = scratch.data() + (y - 1) * row;
    const uint8_t* middle = above + row;
    const uint8_t* below = middle + row;
    // conv2d with [[1,1,1],[1,5,1],[1,1,1]] / 13 in float32, rounded: the exact value is S / 13, never within
    // 0.03 of a half, far beyond float32's error, so round(S / 13) = (S + 6) / 13 in integers.
    for (int64_t at = channels; at < row - channels; ++at) {
      const int sum = above[at - channels] + above[at] + above[at + channels] + middle[at - channels] +
                      5 * middle[at] + middle[at + channels] + below[at - channels] + below[at] + below[at + channels];
      blurred[static_cast<size_t>(at)] = static_cast<uint8_t>((sum + 6) / 13);
    }
    for (int64_t at = 0; at < channels; ++at) blurred[static_cast<size_t>(at)] = middle[at];
    for (int64_t at = row - channels; at < row; ++at) blurred[static_cast<size_t>(at)] = middle[at];
    uint8_t* out = pixels + y * row;
    for (int64_t at = 0; at < row; ++at) out[at] = blend(middle[at], blurred[static_cast<size_t>(at)]);
  }
}

void posterize(int bits, uint8_t* pixels, int64_t values) {
  const uint8_t mask = static_cast<uint8_t>(-(1 << (8 - bits)));
  for (int64_t i = 0; i < values; ++i) pixels[i] &= mask;
}

void solarize(double threshold, uint8_t* pixels, int64_t values) {
  const float t = static_cast<float>(threshold);
  std::array<uint8_t, 256> table{};
  for (int v = 0; v < 256; ++v)
    table[static_cast<size_t>(v)] = static_cast<float>(v) >= t ? static_cast<uint8_t>(255 - v) : static_cast<uint8_t>(v);
  apply_table(table, pixels, values, 1, 0);
}

template <int C>
void auto_contrast(uint8_t* pixels, int64_t count) {
  constexpr int channels = C;
  std::array<uint8_t, 3> lo = {255, 255, 255}, hi = {0, 0, 0};
  for (int64_t p = 0; p < count; ++p)
    for (int ch = 0; ch < channels; ++ch) {
      const uint8_t v = pixels[p * channels + ch];
      lo[static_cast<size_t>(ch)] = std::min(lo[static_cast<size_t>(ch)], v);
      hi[static_cast<size_t>(ch)] = std::max(hi[static_cast<size_t>(ch)], v);
    }
  std::array<std::array<uint8_t, 256>, 3> tables{};
  for (int ch = 0; ch < channels; ++ch) {
    float minimum = lo[static_cast<size_t>(ch)];
    // bound / (max - min) is Tensor.__rtruediv__: the reciprocal, then times 255.
    float scale = (1.f / (static_cast<float>(hi[static_cast<size_t>(ch)]) - minimum)) * 255.f;
    if (!std::isfinite(scale)) minimum = 0, scale = 1;
    for (int v = 0; v < 256; ++v)
      tables[static_cast<size_t>(ch)][static_cast<size_t>(v)] = clamp_truncate((static_cast<float>(v) - minimum) * scale);
  }
  for (int64_t p = 0; p < count; ++p)
    for (int ch = 0; ch < channels; ++ch) {
      uint8_t& v = pixels[p * channels + ch];
      v = tables[static_cast<size_t>(ch)][v];
    }
}

void equalize(uint8_t* pixels, int64_t count, int channels) {
  for (int ch = 0; ch < channels; ++ch) {
    std::array<int64_t, 256> histogram{};
    for (int64_t p = 0; p < count; ++p) ++histogram[pixels[p * channels + ch]];
    // step = (sum of the non-zero bins but the last) // 255
    int last = 255;
    while (last > 0 && histogram[static_cast<size_t>(last)] == 0) --last;
    const int64_t step = (count - histogram[static_cast<size_t>(last)]) / 255;
    if (step == 0) continue;
    std::array<uint8_t, 256> table{};
    int64_t cumulative = 0;
    for (int v = 0; v < 256; ++v) {  // lut shifted right by one: entry v uses the cumulative count below v
      table[static_cast<size_t>(v)] = static_cast<uint8_t>(std::min<int64_t>((cumulative + step / 2) / step, 255));
      cumulative += histogram[static_cast<size_t>(v)];
    }
    apply_table(table, pixels, count, channels, ch);
  }
}

// How an op's magnitudes are made from its range (torchvision's _augmentation_space entries).
enum class MagnitudeRule : uint8_t {
  none,              // a 0-dim tensor: 0
  linspace,          // linspace(0, end, bins)
  translate_width,   // standard: linspace(0, 150 / 331 * width, bins); wide: linspace(0, end, bins)
  translate_height,  // the same with the height
  posterize,         // 8 - (arange(bins) / ((bins - 1) / end)).round().int()
  solarize,          // linspace(255, 0, bins)
};

struct AugmentOpRow {
  AugmentOp op;
  const char* name;
  bool is_signed;
  MagnitudeRule rule;
  double standard_end, wide_end;  // RandAugment's and AutoAugment's range; TrivialAugmentWide's
};

// The one table of the ops, in AugmentOp's order (torchvision's _augmentation_space order, then Invert).
constexpr std::array<AugmentOpRow, kAugmentOps> kOps = {{
    {AugmentOp::identity, "Identity", false, MagnitudeRule::none, 0, 0},
    {AugmentOp::shear_x, "ShearX", true, MagnitudeRule::linspace, 0.3, 0.99},
    {AugmentOp::shear_y, "ShearY", true, MagnitudeRule::linspace, 0.3, 0.99},
    {AugmentOp::translate_x, "TranslateX", true, MagnitudeRule::translate_width, 150.0 / 331.0, 32.0},
    {AugmentOp::translate_y, "TranslateY", true, MagnitudeRule::translate_height, 150.0 / 331.0, 32.0},
    {AugmentOp::rotate, "Rotate", true, MagnitudeRule::linspace, 30.0, 135.0},
    {AugmentOp::brightness, "Brightness", true, MagnitudeRule::linspace, 0.9, 0.99},
    {AugmentOp::color, "Color", true, MagnitudeRule::linspace, 0.9, 0.99},
    {AugmentOp::contrast, "Contrast", true, MagnitudeRule::linspace, 0.9, 0.99},
    {AugmentOp::sharpness, "Sharpness", true, MagnitudeRule::linspace, 0.9, 0.99},
    {AugmentOp::posterize, "Posterize", false, MagnitudeRule::posterize, 4, 6},
    {AugmentOp::solarize, "Solarize", false, MagnitudeRule::solarize, 0, 0},
    {AugmentOp::auto_contrast, "AutoContrast", false, MagnitudeRule::none, 0, 0},
    {AugmentOp::equalize, "Equalize", false, MagnitudeRule::none, 0, 0},
    {AugmentOp::invert, "Invert", false, MagnitudeRule::none, 0, 0},
}};

constexpr bool table_in_enum_order() {
  for (size_t k = 0; k < kOps.size(); ++k)
    if (static_cast<size_t>(kOps[k].op) != k) return false;
  return true;
}
static_assert(table_in_enum_order(), "kOps must list the ops in AugmentOp's order");

const AugmentOpRow& row_of(AugmentOp op) {
  DDPX_INTERNAL_ASSERT(static_cast<int>(op) < kAugmentOps, "augmentation op {}", static_cast<int>(op));
  return kOps[static_cast<size_t>(op)];
}

}  // namespace

const char* augment_op_name(AugmentOp op) { return row_of(op).name; }

bool augment_op_signed(AugmentOp op) { return row_of(op).is_signed; }

bool augment_op_has_magnitudes(AugmentOp op) { return row_of(op).rule != MagnitudeRule::none; }

double augment_op_magnitude(AugmentOp op, int bin, int num_bins, int height, int width, AugmentRanges ranges) {
  DDPX_INTERNAL_ASSERT(bin >= 0 && bin < num_bins, "magnitude bin {} of {}", bin, num_bins);
  const AugmentOpRow& row = row_of(op);
  const bool wide = ranges == AugmentRanges::wide;
  const double end = wide ? row.wide_end : row.standard_end;
  auto linspace = [&](double to) { return static_cast<double>(torch_linspace_at(0.0, to, num_bins, bin)); };
  switch (row.rule) {
    case MagnitudeRule::none:
      return 0.0;
    case MagnitudeRule::linspace:
      return linspace(end);
    case MagnitudeRule::translate_width:  // 150.0 / 331.0 * image_size[1], in that order
      return linspace(wide ? end : end * width);
    case MagnitudeRule::translate_height:
      return linspace(wide ? end : end * height);
    case MagnitudeRule::posterize:  // the division in float32
      return 8 - static_cast<int>(std::nearbyint(static_cast<float>(bin) / static_cast<float>((num_bins - 1) / end)));
    case MagnitudeRule::solarize:
      return static_cast<double>(torch_linspace_at(255.0, 0.0, num_bins, bin));
  }
  return 0.0;
}

void apply_augment_op(AugmentOp op, double magnitude, uint8_t* pixels, int height, int width, int channels,
                      std::vector<uint8_t>& scratch) {
  DDPX_INTERNAL_ASSERT(channels == 1 || channels == 3, "an augmentation op on {} channels", channels);
  const int64_t count = static_cast<int64_t>(height) * width, values = count * channels;
  const double shear = std::atan(magnitude) * kRadiansToDegrees;  // math.degrees(math.atan(magnitude))
  switch (op) {
    case AugmentOp::identity:
      return;
    case AugmentOp::shear_x:  // F.affine(shear=[deg, 0], center=[0, 0]): centre (-w/2, -h/2) in grid units
      return warp_in_place(inverse_affine_matrix(-width * 0.5, -height * 0.5, 0.0, 0.0, 0.0, shear, 0.0), pixels,
                           height, width, channels, scratch);
    case AugmentOp::shear_y:
      return warp_in_place(inverse_affine_matrix(-width * 0.5, -height * 0.5, 0.0, 0.0, 0.0, 0.0, shear), pixels,
                           height, width, channels, scratch);
    case AugmentOp::translate_x:  // translate=[int(magnitude), 0]
      return warp_in_place(inverse_affine_matrix(0.0, 0.0, 0.0, static_cast<int>(magnitude), 0.0, 0.0, 0.0), pixels,
                           height, width, channels, scratch);
    case AugmentOp::translate_y:
      return warp_in_place(inverse_affine_matrix(0.0, 0.0, 0.0, 0.0, static_cast<int>(magnitude), 0.0, 0.0), pixels,
                           height, width, channels, scratch);
    case AugmentOp::rotate:  // F.rotate passes -angle
      return warp_in_place(inverse_affine_matrix(0.0, 0.0, -magnitude, 0.0, 0.0, 0.0, 0.0), pixels, height, width,
                           channels, scratch);
    case AugmentOp::brightness:
      return brightness(1.0 + magnitude, pixels, values);
    case AugmentOp::color:
      return color(1.0 + magnitude, pixels, count, channels);
    case AugmentOp::contrast:
      return contrast(1.0 + magnitude, pixels, count, channels);
    case AugmentOp::sharpness:
      return sharpness(1.0 + magnitude, pixels, height, width, channels, scratch);
    case AugmentOp::posterize:
      return posterize(static_cast<int>(magnitude), pixels, values);
    case AugmentOp::solarize:
      return solarize(magnitude, pixels, values);
    case AugmentOp::auto_contrast:
      return channels == 3 ? auto_contrast<3>(pixels, count) : auto_contrast<1>(pixels, count);
    case AugmentOp::equalize:
      return equalize(pixels, count, channels);
    case AugmentOp::invert:  // F_t.invert: 255 - v on uint8
      for (int64_t i = 0; i < values; ++i) pixels[i] = static_cast<uint8_t>(255 - pixels[i]);
      return;
  }
}

}  // namespace ddpx
