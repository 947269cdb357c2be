// .npy reader and writer (see npy.hpp for the accepted subset). The header is a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and a final newline so that the
// data starts at a multiple of 64 bytes.
#include "io/npy.hpp"

#include <fmt/ranges.h>

#include <array>
#include <cstring>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "io/posix_file.hpp"

namespace ddpx {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct NpyDescr {
  const char* descr;
  TensorDType dtype;
};
constexpr std::array<NpyDescr, 7> kDescrs = {{{"<f4", TensorDType::f32},
                                              {"<f8", TensorDType::f64},
                                              {"<f2", TensorDType::f16},
                                              {"<i4", TensorDType::i32},
                                              {"<i8", TensorDType::i64},
                                              {"|u1", TensorDType::u8},
                                              {"<u1", TensorDType::u8}}};

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Recursive-descent parser for the header's restricted dict literal.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::filesystem::path& path) : text_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader header;
    bool has_descr = false, has_fortran_order = false, has_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = parse_string();
      expect(':');
      if ((key == "descr" && has_descr) || (key == "fortran_order" && has_fortran_order) ||
          (key == "shape" && has_shape))
        malformed(fmt::format("key '{}' appears twice", key));
      if (key == "descr") {
        header.descr = parse_string();
        has_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = parse_bool();
        has_fortran_order = true;
      } else if (key == "shape") {
        header.shape = parse_tuple();
        has_shape = true;
      } else {
        malformed(fmt::format("unknown key '{}'", key));
      }
      skip_space();
      if (peek() == ',') ++pos_;
      else if (peek() != '}') malformed("expected ',' or '}'");
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) malformed("unexpected text after the closing '}'");
    if (!has_descr || !has_fortran_order || !has_shape)
      malformed("it needs the keys 'descr', 'fortran_order' and 'shape'");
    return header;
  }

 private:
  [[noreturn]] void malformed(std::string_view what) const {
    fail("'{}': malformed .npy header at byte {}: {} (header: {})", path_.string(), pos_, what, text_);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) malformed(fmt::format("expected '{}'", c));
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') malformed("expected a quoted string");
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) malformed("unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }
  bool parse_bool() {
    skip_space();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    malformed("expected True or False");
  }
  std::vector<int64_t> parse_tuple() {
    expect('(');
    std::vector<int64_t> values;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') malformed("expected a non-negative integer dimension");
      int64_t value = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, peek() - '0', &value))
          malformed("dimension too large");
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 long suffix, written by old NumPy
      values.push_back(value);
      skip_space();
      if (peek() == ',') ++pos_;
      else if (peek() != ')') malformed("expected ',' or ')' in the shape");
    }
    ++pos_;
    return values;
  }

  std::string_view text_;
  const std::filesystem::path& path_;
  size_t pos_ = 0;
};

TensorDType dtype_from_descr(const std::string& descr, const std::filesystem::path& path) {
  for (const auto& known : kDescrs)
    if (descr == known.descr) return known.dtype;
  const bool big_endian = !descr.empty() && descr[0] == '>';
  // Integers (int16 labels) are re-saved as integers, floats as float32: class indices must not become floats.
  const bool integer = descr.size() >= 2 && (descr[1] == 'i' || descr[1] == 'u' || descr[1] == 'b');
  fail("'{}' holds dtype '{}', which ddpx does not read{}; supported: '<f4', '<f8', '<f2', '<i4', '<i8', '|u1' "
       "(re-save it with np.save(path, a.astype('{}')){})",
       path.string(), descr, big_endian ? " (big-endian)" : "", integer ? "<i8" : "<f4",
       integer ? ": integer arrays such as labels stay integers" : "");
}

const char* descr_from_dtype(TensorDType dtype, const std::filesystem::path& path) {
  for (const auto& known : kDescrs)
    if (known.dtype == dtype) return known.descr;
  fail("cannot write '{}': .npy has no {} dtype; convert the tensor to f32 first", path.string(), dtype_name(dtype));
}

}  // namespace

HostTensor read_npy(const std::filesystem::path& path) {
  InputFile file(path);
  const uint64_t file_size = file.size();
  DDPX_REQUIRE(file_size >= kMagicSize + 4,
               "'{}' is not a complete .npy file: it has {} bytes, fewer than the 10-byte preamble; it is truncated",
               path.string(), file_size);
  std::array<unsigned char, 12> preamble{};
  file.read_at(0, preamble.data(), kMagicSize + 4);
  DDPX_REQUIRE(std::memcmp(preamble.data(), kMagic, kMagicSize) == 0,
               "'{}' is not a .npy file (it does not start with \\x93NUMPY)", path.string());
  const unsigned major = preamble[6], minor = preamble[7];
  DDPX_REQUIRE((major == 1 || major == 2 || major == 3) && minor == 0,
               "'{}' has .npy format version {}.{}; ddpx reads 1.0, 2.0 and 3.0", path.string(), major, minor);
  uint64_t header_size = 0;
  uint64_t preamble_size = 0;
  if (major == 1) {
    header_size = preamble[8] | (static_cast<uint64_t>(preamble[9]) << 8);
    preamble_size = 10;
  } else {
    DDPX_REQUIRE(file_size >= 12, "'{}' is truncated inside its .npy preamble ({} bytes)", path.string(), file_size);
    file.read_at(0, preamble.data(), 12);
    header_size = preamble[8] | (static_cast<uint64_t>(preamble[9]) << 8) |
                  (static_cast<uint64_t>(preamble[10]) << 16) | (static_cast<uint64_t>(preamble[11]) << 24);
    preamble_size = 12;
  }
  DDPX_REQUIRE(header_size <= file_size - preamble_size,
               "'{}' is truncated: its .npy header needs {} bytes but only {} follow the preamble", path.string(),
               header_size, file_size - preamble_size);
  std::string header_text(header_size, '\0');
  file.read_at(preamble_size, header_text.data(), header_size);
  const NpyHeader header = HeaderParser(header_text, path).parse();

  const TensorDType dtype = dtype_from_descr(header.descr, path);
  DDPX_REQUIRE(!header.fortran_order,
               "'{}' stores its {} array in Fortran order; ddpx reads C-order arrays only: re-save it with "
               "np.save(path, np.ascontiguousarray(a))",
               path.string(), shape_string(header.shape));
  uint64_t data_bytes = 0;
  size_t numel = 0;
  try {
    numel = shape_numel(header.shape);
  } catch (const Error& e) {
    fail("'{}': {}", path.string(), e.what());
  }
  DDPX_REQUIRE(!__builtin_mul_overflow(static_cast<uint64_t>(numel), dtype_size(dtype), &data_bytes),
               "'{}': shape {} is too large", path.string(), shape_string(header.shape));
  const uint64_t data_start = preamble_size + header_size;
  const uint64_t available = file_size - data_start;
  DDPX_REQUIRE(available >= data_bytes,
               "'{}' is truncated: a {} array of shape {} needs {} data bytes but the file has {}", path.string(),
               header.descr, shape_string(header.shape), data_bytes, available);
  DDPX_REQUIRE(available == data_bytes,
               "'{}' has {} bytes after its {} array of shape {}; a .npy file holds exactly one array", path.string(),
               available - data_bytes, header.descr, shape_string(header.shape));
  HostTensor tensor = HostTensor::zeros(dtype, header.shape);
  file.read_at(data_start, tensor.data.data(), tensor.data.size());
  return tensor;
}

HostTensor read_npy(const std::filesystem::path& path, TensorDType expected_dtype,
                    std::span<const int64_t> expected_shape) {
  HostTensor tensor = read_npy(path);
  DDPX_REQUIRE(tensor.dtype == expected_dtype, "'{}' holds {} values but {} are expected", path.string(),
               dtype_name(tensor.dtype), dtype_name(expected_dtype));
  bool shape_matches = tensor.shape.size() == expected_shape.size();
  for (size_t i = 0; shape_matches && i < expected_shape.size(); ++i)
    shape_matches = expected_shape[i] == -1 || expected_shape[i] == tensor.shape[i];
  DDPX_REQUIRE(shape_matches, "'{}' has shape {} but {} is expected (-1: any size)", path.string(),
               shape_string(tensor.shape), shape_string(expected_shape));
  return tensor;
}

void write_npy(const std::filesystem::path& path, const HostTensor& tensor) {
  OutputFile file(path);
  write_npy(file, tensor);
  file.close();
}

void write_npy(OutputFile& file, const HostTensor& tensor) {
  const std::filesystem::path& path = file.path();
  const char* descr = descr_from_dtype(tensor.dtype, path);
  DDPX_REQUIRE(tensor.data.size() == tensor.numel() * dtype_size(tensor.dtype),
               "cannot write '{}': the tensor holds {} bytes but {} {} needs {}", path.string(), tensor.data.size(),
               dtype_name(tensor.dtype), shape_string(tensor.shape), tensor.numel() * dtype_size(tensor.dtype));
  std::string shape_text = tensor.shape.size() == 1 ? fmt::format("({},)", tensor.shape[0])
                                                    : fmt::format("({})", fmt::join(tensor.shape, ", "));
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape_text);
  // Pad with spaces and end with '\n' so that the data starts at a multiple of 64 bytes.
  const auto padded_length = [&](size_t preamble) {
    return (preamble + header.size() + 1 + 63) / 64 * 64 - preamble;
  };
  const bool version1 = padded_length(10) <= 65535;
  const size_t preamble_size = version1 ? 10 : 12;
  header.append(padded_length(preamble_size) - header.size() - 1, ' ');
  header.push_back('\n');
  std::string preamble(kMagic, kMagicSize);
  preamble.push_back(static_cast<char>(version1 ? 1 : 2));
  preamble.push_back(0);
  const uint64_t length = header.size();
  for (size_t i = 0; i < preamble_size - 8; ++i) preamble.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  file.write(preamble.data(), preamble.size());
  file.write(header.data(), header.size());
  file.write(tensor.data.data(), tensor.data.size());
}

}  // namespace ddpx
