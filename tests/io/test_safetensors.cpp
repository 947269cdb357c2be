// Safetensors round trips, a file laid out as the reference implementation writes it, and every malformed case
// the reader must refuse with an error naming the file and the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "io/io_test_support.hpp"
#include "io/safetensors.hpp"

namespace ddpx {
namespace {

using testing::expect_error;
using testing::TempDir;

// A file made of an 8-byte little-endian header length, the header text, and the data bytes.
std::string safetensors_bytes(std::string_view header, std::string_view data) {
  std::string bytes(8, '\0');
  const uint64_t length = header.size();
  std::memcpy(bytes.data(), &length, 8);
  bytes += header;
  bytes += data;
  return bytes;
}

TEST(Safetensors, RoundTripEveryDtypeWithMetadata) {
  TempDir dir;
  SafetensorsContents written;
  written.metadata = {{"format", "pt"}, {"note", "héllo \"quoted\""}};
  const std::vector<float> f32 = {1.5f, -2.f, 3.25f, 0.f, 1e-30f, -0.f};
  const std::vector<double> f64 = {0.1, -1e300};
  const std::vector<int32_t> i32 = {-1, 2, 3};
  const std::vector<int64_t> i64 = {1LL << 50};
  const std::vector<uint8_t> u8 = {0, 7, 255};
  written.tensors.push_back({"weights", HostTensor::from_values<float>({2, 3}, f32)});
  written.tensors.push_back({"doubles", HostTensor::from_values<double>({2}, f64)});
  written.tensors.push_back({"ints", HostTensor::from_values<int32_t>({3, 1}, i32)});
  written.tensors.push_back({"scalar", HostTensor::from_values<int64_t>({}, i64)});
  written.tensors.push_back({"bytes", HostTensor::from_values<uint8_t>({3}, u8)});
  written.tensors.push_back({"empty", HostTensor::zeros(TensorDType::f32, {0, 4})});
  HostTensor half = HostTensor::zeros(TensorDType::f16, {2});
  half.data = {std::byte{0x00}, std::byte{0x3c}, std::byte{0x00}, std::byte{0xc0}};  // 1.0, -2.0
  written.tensors.push_back({"half", half});
  HostTensor brain = HostTensor::zeros(TensorDType::bf16, {1});
  brain.data = {std::byte{0x80}, std::byte{0x3f}};  // 1.0
  written.tensors.push_back({"brain", brain});
  write_safetensors(dir / "t.safetensors", written);

  const std::string raw = testing::read_bytes(dir / "t.safetensors");
  uint64_t header_size = 0;
  std::memcpy(&header_size, raw.data(), 8);
  EXPECT_EQ((8 + header_size) % 8, 0u) << "data must start 8-byte aligned";
  EXPECT_EQ(raw.substr(8, 16), R"({"__metadata__":)");

  const SafetensorsContents read = read_safetensors(dir / "t.safetensors");
  EXPECT_EQ(read.metadata, written.metadata);
  ASSERT_EQ(read.tensors.size(), written.tensors.size());
  for (size_t i = 0; i < read.tensors.size(); ++i) {
    EXPECT_EQ(read.tensors[i].name, written.tensors[i].name);  // data order is write order
    EXPECT_EQ(read.tensors[i].tensor.dtype, written.tensors[i].tensor.dtype) << read.tensors[i].name;
    EXPECT_EQ(read.tensors[i].tensor.shape, written.tensors[i].tensor.shape) << read.tensors[i].name;
    EXPECT_EQ(read.tensors[i].tensor.data, written.tensors[i].tensor.data) << read.tensors[i].name;
  }
  EXPECT_EQ(read.find("half")->to_float32(), (std::vector<float>{1.f, -2.f}));
  EXPECT_EQ(read.find("brain")->to_float32(), (std::vector<float>{1.f}));
  EXPECT_EQ(read.find("scalar")->values<int64_t>()[0], 1LL << 50);
  EXPECT_EQ(read.find("missing"), nullptr);

  const SafetensorsReader reader(dir / "t.safetensors");
  EXPECT_EQ(reader.at("ints").shape, (std::vector<int64_t>{3, 1}));
  expect_error([&] { (void)reader.at("nope"); }, {"t.safetensors", "'nope'"});
}

TEST(Safetensors, ReadsTheReferenceLayout) {
  // As safetensors.torch.save_file({"test": torch.zeros(2, 2, dtype=torch.int32)}, f, {"foo": "bar"}) lays it
  // out: metadata after the tensors, header padded with spaces to a multiple of 8.
  TempDir dir;
  std::string header = R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]},"__metadata__":{"foo":"bar"}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  const int32_t values[4] = {1, -2, 3, 4};
  testing::write_bytes(dir / "ref.safetensors",
                       safetensors_bytes(header, std::string_view(reinterpret_cast<const char*>(values), 16)));
  const SafetensorsContents read = read_safetensors(dir / "ref.safetensors");
  EXPECT_EQ(read.metadata.at("foo"), "bar");
  ASSERT_NE(read.find("test"), nullptr);
  EXPECT_EQ(read.find("test")->to_int64(), (std::vector<int64_t>{1, -2, 3, 4}));
}

// Writes a file from header and data, expects the reader to refuse it with all needles in the message.
void expect_refused(const TempDir& dir, std::string_view header, std::string_view data,
                    std::initializer_list<std::string_view> needles) {
  const auto path = dir / "bad.safetensors";
  testing::write_bytes(path, safetensors_bytes(header, data));
  SCOPED_TRACE(std::string(header));
  expect_error([&] { SafetensorsReader reader(path); }, needles);
}

TEST(Safetensors, RefusesMalformedFilesNamingFileAndTensor) {
  TempDir dir;
  const std::string data16(16, '\0');
  const auto path = dir / "bad.safetensors";

  testing::write_bytes(path, "abc");
  expect_error([&] { SafetensorsReader reader(path); }, {"bad.safetensors", "truncated", "3 bytes"});
  testing::write_bytes(path, "");
  expect_error([&] { SafetensorsReader reader(path); }, {"bad.safetensors", "0 bytes"});
  expect_error([&] { SafetensorsReader reader(dir / "absent.safetensors"); },
               {"absent.safetensors", "No such file"});

  std::string header_too_long = safetensors_bytes("{}", "");
  header_too_long[0] = 100;  // claims 100 header bytes, 2 present
  testing::write_bytes(path, header_too_long);
  expect_error([&] { SafetensorsReader reader(path); }, {"bad.safetensors", "header length 100", "beyond"});

  expect_refused(dir, R"({"a": {"dtype": "F32", )", "", {"bad.safetensors", "not valid JSON"});
  expect_refused(dir, R"([1, 2])", "", {"bad.safetensors", "JSON object"});
  expect_refused(dir, "{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}", "",
                 {"bad.safetensors", "nests JSON deeper than 64 levels"});
  expect_refused(dir, R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", std::string(2, '\0'),
                 {"bad.safetensors", "'w'", "F8_E4M3", "F32"});
  expect_refused(dir, R"({"w":{"shape":[2],"data_offsets":[0,8]}})", data16.substr(0, 8),
                 {"bad.safetensors", "'w'", "lacks 'dtype'"});
  expect_refused(dir, R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data16.substr(0, 8),
                 {"bad.safetensors", "'w'", "shape", "[-2]"});
  expect_refused(dir, R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data16.substr(0, 8),
                 {"bad.safetensors", "'w'", "data_offsets", "begin <= end"});
  // Offsets not matching dtype x shape.
  expect_refused(dir, R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", data16.substr(0, 12),
                 {"bad.safetensors", "'w'", "12 bytes", "F32 [2, 2] needs 16"});
  // Offsets past the end of the data (a truncated file).
  expect_refused(dir, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data16.substr(0, 10),
                 {"bad.safetensors", "'w'", "past the end", "10 bytes", "truncated"});
  // Overlapping tensors.
  expect_refused(dir,
                 R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                 data16.substr(0, 12), {"bad.safetensors", "'b'", "overlap", "'a'"});
  // A gap between tensors.
  expect_refused(dir,
                 R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                 data16.substr(0, 12), {"bad.safetensors", "'b'", "[4, 8)", "no tensor"});
  // Trailing bytes after the last tensor.
  expect_refused(dir, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data16.substr(0, 6),
                 {"bad.safetensors", "6 bytes", "cover only 4"});
  // The same tensor twice.
  expect_refused(dir,
                 R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                 R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 data16.substr(0, 8), {"bad.safetensors", "'a'", "twice"});
  expect_refused(dir, R"({"__metadata__":{"step":3}})", "", {"bad.safetensors", "'step'", "string"});
}

TEST(Safetensors, WriterRefusesBadInputNamingTheTensor) {
  TempDir dir;
  const float values[2] = {1.f, 2.f};
  const std::vector<TensorView> duplicate = {{"a", TensorDType::f32, {2}, values}, {"a", TensorDType::f32, {2}, values}};
  expect_error([&] { write_safetensors(dir / "w.safetensors", duplicate); }, {"w.safetensors", "'a'", "twice"});
  const std::vector<TensorView> reserved = {{"__metadata__", TensorDType::f32, {2}, values}};
  expect_error([&] { write_safetensors(dir / "w.safetensors", reserved); }, {"'__metadata__'", "reserved"});
  const std::vector<TensorView> no_data = {{"b", TensorDType::f32, {2}, nullptr}};
  expect_error([&] { write_safetensors(dir / "w.safetensors", no_data); }, {"'b'", "no data"});
  const std::vector<TensorView> negative = {{"c", TensorDType::f32, {-1}, values}};
  expect_error([&] { write_safetensors(dir / "w.safetensors", negative); }, {"'c'", "[-1]", "negative"});
}

}  // namespace
}  // namespace ddpx
