// Fuzz target: the idx reader (IdxSource: `--data idx:DIR`), plain and gzipped.
// The reader must guarantee, for any bytes: no crash, no hang, memory bounded by the header's size and what the
// file can hold (Note [Bounded gunzip]), every refusal a ddpx::Error naming the file.
// The input's first byte picks the mode: bit 0 set, the rest is a list of structure-aware edits of a valid images
// and labels pair (magic, count, height, width at boundary values or raw bytes; tests/fuzz/structured_files.hpp);
// clear, the rest is the images file itself beside valid labels. Bit 1 set: both files gzipped.
#include <zlib.h>

#include <cstddef>
#include <cstdint>

#include "data/idx_source.hpp"
#include "fuzz_support.hpp"
#include "structured_files.hpp"

namespace {

void write(const std::string& name, const std::vector<uint8_t>& bytes, bool gzip) {
  std::error_code ignored;
  std::filesystem::remove(ddpx::fuzz::scratch_dir() / name, ignored);
  std::filesystem::remove(ddpx::fuzz::scratch_dir() / (name + ".gz"), ignored);
  if (!gzip) {
    ddpx::fuzz::write_scratch_file(name, bytes.data(), bytes.size());
    return;
  }
  std::vector<uint8_t> packed(compressBound(static_cast<uLong>(bytes.size())) + 32);
  z_stream stream{};
  deflateInit2(&stream, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  stream.next_in = const_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = packed.data();
  stream.avail_out = static_cast<uInt>(packed.size());
  deflate(&stream, Z_FINISH);
  packed.resize(stream.total_out);
  deflateEnd(&stream);
  ddpx::fuzz::write_scratch_file(name + ".gz", packed.data(), packed.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool structured = (data[0] & 1) != 0, gzip = (data[0] & 2) != 0;
  std::vector<uint8_t> images = ddpx::fuzz::seed_idx_images(), labels = ddpx::fuzz::seed_idx_labels();
  if (structured) {
    std::vector<ddpx::fuzz::Field> fields = ddpx::fuzz::idx_image_fields();
    for (ddpx::fuzz::Field field : ddpx::fuzz::idx_label_fields()) {
      field.offset += images.size();  // label fields address the labels file, after the images in one buffer
      fields.push_back(field);
    }
    std::vector<uint8_t> both = images;
    both.insert(both.end(), labels.begin(), labels.end());
    ddpx::fuzz::edit_fields(both, fields, ddpx::fuzz::edits_from(data + 1, size - 1, fields, images.size()));
    images.assign(both.begin(), both.begin() + static_cast<std::ptrdiff_t>(images.size()));
    labels.assign(both.begin() + static_cast<std::ptrdiff_t>(images.size()), both.end());
  } else {
    images.assign(data + 1, data + size);
  }
  write("train-images-idx3-ubyte", images, gzip);
  write("train-labels-idx1-ubyte", labels, gzip);
  ddpx::fuzz::expect_clean_refusal([&] {
    const ddpx::IdxSource idx(ddpx::fuzz::scratch_dir().string(), ddpx::DataSplit::train, ddpx::DataOrigin::train_data);
    std::vector<uint8_t> scratch;
    for (int64_t i = 0; i < idx.size(); ++i) idx.read(i, scratch);
  });
  return 0;
}
