// .npy round trips for every supported dtype, files laid out as NumPy writes them (versions 1.0, 2.0, 3.0), and
// every refused case naming the file.
#include <gtest/gtest.h>

#include <vector>

#include "io/io_test_support.hpp"
#include "io/npy.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
using testing::TempDir;

// A .npy file: magic, version, little-endian header length (2 bytes for 1.0, 4 otherwise), header, data.
std::string npy_bytes(int major, std::string header, std::string_view data, bool pad = true) {
  const size_t preamble = major == 1 ? 10 : 12;
  if (pad) {
    header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
    header.push_back('\n');
  }
  std::string bytes = "\x93NUMPY";
  bytes.push_back(static_cast<char>(major));
  bytes.push_back(0);
  for (size_t i = 0; i < preamble - 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  return bytes + header + std::string(data);
}

TEST(Npy, RoundTripEveryDtype) {
  TempDir dir;
  const std::vector<float> f32 = {1.5f, -2.f, 3.f, 4.f, 5.f, 6.f};
  const std::vector<double> f64 = {0.1, -0.2};
  const std::vector<int32_t> i32 = {7, -8, 9};
  const std::vector<int64_t> i64 = {-(1LL << 40), 2, 3, 4};
  const std::vector<uint8_t> u8 = {0, 128, 255};
  HostTensor f16 = HostTensor::zeros(TensorDType::f16, {2});
  f16.data = {std::byte{0x00}, std::byte{0x3c}, std::byte{0x00}, std::byte{0xc0}};
  const std::vector<HostTensor> tensors = {
      HostTensor::from_values<float>({2, 3}, f32), HostTensor::from_values<double>({2}, f64),
      HostTensor::from_values<int32_t>({1, 3, 1}, i32), HostTensor::from_values<int64_t>({4}, i64),
      HostTensor::from_values<uint8_t>({3}, u8), f16,
      HostTensor::from_values<float>({}, std::vector<float>{42.f}), HostTensor::zeros(TensorDType::f32, {0, 3})};
  for (const HostTensor& tensor : tensors) {
    SCOPED_TRACE(std::string(dtype_name(tensor.dtype)) + " " + shape_string(tensor.shape));
    write_npy(dir / "a.npy", tensor);
    const HostTensor read = read_npy(dir / "a.npy");
    EXPECT_EQ(read.dtype, tensor.dtype);
    EXPECT_EQ(read.shape, tensor.shape);
    EXPECT_EQ(read.data, tensor.data);
  }
}

TEST(Npy, WritesNumPysLayout) {
  TempDir dir;
  write_npy(dir / "a.npy", HostTensor::zeros(TensorDType::f32, {2, 3}));
  const std::string bytes = testing::read_bytes(dir / "a.npy");
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(bytes.size(), 128u + 24u);  // 10-byte preamble + header padded to 128, then 6 floats
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8), 118);
  EXPECT_EQ(bytes.substr(10, dict.size()), dict);
  EXPECT_EQ(bytes[127], '\n');
  write_npy(dir / "b.npy", HostTensor::zeros(TensorDType::u8, {5}));
  EXPECT_NE(testing::read_bytes(dir / "b.npy").find("'descr': '|u1', 'fortran_order': False, 'shape': (5,), }"),
            std::string::npos);
  expect_error([&] { write_npy(dir / "c.npy", HostTensor::zeros(TensorDType::bf16, {2})); },
               {"c.npy", "bf16", "f32"});
}

TEST(Npy, ReadsVersions2And3AndOldSpellings) {
  TempDir dir;
  const int64_t values[3] = {5, -6, 7};
  const std::string_view data(reinterpret_cast<const char*>(values), sizeof(values));
  for (int major : {2, 3}) {
    testing::write_bytes(dir / "v.npy", npy_bytes(major, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", data));
    EXPECT_EQ(read_npy(dir / "v.npy").to_int64(), (std::vector<int64_t>{5, -6, 7})) << major;
  }
  // Keys in another order, double quotes, Python 2 long suffix, no trailing comma.
  testing::write_bytes(dir / "v.npy",
                       npy_bytes(1, R"({"shape": (1L, 3L), "fortran_order": False, "descr": "<i8"})", data));
  const HostTensor read = read_npy(dir / "v.npy");
  EXPECT_EQ(read.shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(read.to_int64(), (std::vector<int64_t>{5, -6, 7}));
}

TEST(Npy, ChecksExpectedDtypeAndShape) {
  TempDir dir;
  write_npy(dir / "x.npy", HostTensor::zeros(TensorDType::f32, {8, 3, 4, 4}));
  const std::vector<int64_t> any_batch = {-1, 3, 4, 4};
  EXPECT_EQ(read_npy(dir / "x.npy", TensorDType::f32, any_batch).shape[0], 8);
  const std::vector<int64_t> wrong = {-1, 3, 8, 8};
  expect_error([&] { read_npy(dir / "x.npy", TensorDType::f32, wrong); }, {"x.npy", "[8, 3, 4, 4]", "[-1, 3, 8, 8]"});
  expect_error([&] { read_npy(dir / "x.npy", TensorDType::i64, any_batch); }, {"x.npy", "f32", "i64"});
}

void expect_refused(const TempDir& dir, const std::string& bytes, std::initializer_list<std::string_view> needles) {
  testing::write_bytes(dir / "bad.npy", bytes);
  expect_error([&] { read_npy(dir / "bad.npy"); }, needles);
}

TEST(Npy, RefusesBadFilesNamingTheFile) {
  TempDir dir;
  const std::string data12(12, '\0');
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  expect_refused(dir, npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 1), }", data12),
                 {"bad.npy", "Fortran order", "ascontiguousarray"});
  expect_refused(dir, npy_bytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", data12),
                 {"bad.npy", "'>f4'", "big-endian", "astype"});
  expect_refused(dir, npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", data12),
                 {"bad.npy", "'<c8'"});
  expect_refused(dir, npy_bytes(1, f4, data12.substr(0, 10)), {"bad.npy", "truncated", "needs 12", "has 10"});
  expect_refused(dir, npy_bytes(1, f4, data12 + "xx"), {"bad.npy", "2 bytes after"});
  expect_refused(dir, npy_bytes(1, "{'descr': '<f4', 'shape': (3,), }", data12), {"bad.npy", "fortran_order"});
  expect_refused(dir, npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", data12),
                 {"bad.npy", "unknown key 'x'"});
  expect_refused(dir, npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'descr': '<i4'}", data12),
                 {"bad.npy", "key 'descr' appears twice"});
  expect_refused(dir,
                 npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", data12),
                 {"bad.npy", "64 bits"});
  expect_refused(dir, npy_bytes(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,), }", data12),
                 {"bad.npy", "True or False"});
  expect_refused(dir, npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, -1), }", data12),
                 {"bad.npy", "dimension"});
  std::string bad_version = npy_bytes(1, f4, data12);
  bad_version[6] = 4;
  expect_refused(dir, bad_version, {"bad.npy", "version 4.0"});
  expect_refused(dir, "PK\x03\x04 not numpy at all", {"bad.npy", "not a .npy file"});
  expect_refused(dir, "\x93NUMPY", {"bad.npy", "truncated"});
  std::string header_past_end = npy_bytes(1, f4, "");
  header_past_end[9] = 0x10;  // header length 4096+
  expect_refused(dir, header_past_end, {"bad.npy", "truncated", "header"});
  expect_error([&] { read_npy(dir / "absent.npy"); }, {"absent.npy", "No such file"});
}

}  // namespace
}  // namespace ddpx
