// Hand-crafted data files (issue 48): packs whose offsets and sizes sit at u64 boundaries with every CRC recomputed,
// FIFOs, devices and folders given as data, a pack truncated under a running read, a small gzip idx file that
// claims little and inflates to much, and WebDataset samples with two labels or two images. Each is refused with
// an error naming the file; none crashes, hangs or allocates more than its header's size.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <limits>

#include "data/folder_source.hpp"
#include "data/image_decode.hpp"
#include "data/idx_source.hpp"
#include "data/pack_format.hpp"
#include "data/pack_source.hpp"
#include "data/pack_writer.hpp"
#include "data/wds_source.hpp"
#include "error_expect.hpp"
#include "image_files.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("ddpx_hostile_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
};

std::vector<uint8_t> fixture_png() {
  return testing::read_file(std::string(DDPX_SOURCE_DIR) + "/tests/fixtures/images/rgb.png");
}

// A raw pack of three images in two classes, written by ddpx itself.
std::vector<uint8_t> good_pack(const fs::path& dir) {
  for (const char* file : {"a/0.png", "a/1.png", "b/2.png"}) testing::write_file((dir / "src" / file).string(), fixture_png());
  PackOptions raw;
  raw.storage = PackStorage::raw;
  const std::string path = (dir / "good.pack").string();
  write_pack(FolderSource((dir / "src").string(), DataOrigin::train_data), path, raw);
  return testing::read_file(path);
}

// The pack's trailer and index, editable, written back with every CRC recomputed (docs/pack-format.md): what a
// crafted file looks like, since whoever writes a file computes its checksums.
struct CraftedPack {
  std::vector<uint8_t> bytes;
  PackTrailer trailer;
  uint64_t original_index_offset;
  explicit CraftedPack(std::vector<uint8_t> good) : bytes(std::move(good)) {
    trailer = decode_pack_trailer(bytes.data() + bytes.size() - kPackTrailerBytes, "good.pack");
    original_index_offset = trailer.index_offset;
  }
  PackEntry entry(size_t i) const { return decode_pack_entry(bytes.data() + original_index_offset + i * kPackEntryBytes); }
  void set_entry(size_t i, const PackEntry& e) {
    encode_pack_entry(e, bytes.data() + original_index_offset + i * kPackEntryBytes);
    trailer.index_crc32 = static_cast<uint32_t>(
        crc32(0, bytes.data() + original_index_offset, static_cast<uInt>(trailer.records * kPackEntryBytes)));
  }
  void write(const std::string& path) {
    encode_pack_trailer(trailer, bytes.data() + bytes.size() - kPackTrailerBytes);
    testing::write_file(path, bytes);
  }
};

TEST(HostilePack, EntryOffsetsAndSizesNearTwoToThe64AreRefusedNotWrapped) {
  const Scratch scratch("pack_entry");
  const std::vector<uint8_t> good = good_pack(scratch.dir);
  const std::string path = (scratch.dir / "bad.pack").string();
  // issue 48: offset 2^64 - 8, 24 bytes: offset + size wraps to 16 and passed, then crc32 read 2^64 - 8 (SIGSEGV).
  for (const auto& [offset, size] : std::vector<std::pair<uint64_t, uint32_t>>{
           {kMax - 7, 24}, {kMax - 15, 32}, {uint64_t{1} << 63, 16}, {kMax, 1}, {0, 16}, {1, 16}, {8, 16}}) {
    CraftedPack pack(good);
    PackEntry e = pack.entry(0);
    e.offset = offset;
    e.size = size;
    e.height = static_cast<uint16_t>(size), e.width = 1, e.channels = 1;  // a consistent raw shape: only the place is wrong
    pack.set_entry(0, e);
    pack.write(path);
    expect_error([&] { PackSource p(path, DataOrigin::train_data); }, {path, "index entry 0 is inconsistent", "repack"});
  }
  // A record that runs into the index (offset inside the records region, size past index_offset).
  CraftedPack pack(good);
  PackEntry e = pack.entry(2);
  e.size = static_cast<uint32_t>(pack.trailer.index_offset - e.offset + 16);
  pack.set_entry(2, e);
  pack.write(path);
  expect_error([&] { PackSource p(path, DataOrigin::train_data); }, {path, "index entry 2 is inconsistent"});
}

TEST(HostilePack, TrailerOffsetsAndCountsAtBoundariesAreRefusedNotWrapped) {
  const Scratch scratch("pack_trailer");
  const std::vector<uint8_t> good = good_pack(scratch.dir);
  const std::string path = (scratch.dir / "bad.pack").string();
  const auto refused = [&](const std::function<void(PackTrailer&)>& edit) {
    CraftedPack pack(good);
    edit(pack.trailer);
    pack.write(path);
    expect_error([&] { PackSource p(path, DataOrigin::train_data); }, {path, "the trailer's offsets do not fit", "repack"});
  };
  // issue 48: index_offset = 2^64 - 16 wrapped index_offset + 32 N and passed.
  for (uint64_t value : {kMax - 15, kMax, uint64_t{1} << 63, uint64_t{0}, uint64_t{1}, uint64_t{8}, uint64_t(good.size())})
    refused([&](PackTrailer& t) { t.index_offset = value; });
  for (uint64_t value : {kMax, uint64_t{1} << 59, uint64_t{1} << 63, uint64_t{0}, uint64_t{4}})
    refused([&](PackTrailer& t) { t.records = value; });
  for (uint64_t value : {kMax - 1, uint64_t{1} << 63, uint64_t{0}, uint64_t{16}})
    refused([&](PackTrailer& t) { t.classes_offset = value; });
  for (uint64_t value : {kMax, kMax - 130, uint64_t{1} << 63, uint64_t{0}})
    refused([&](PackTrailer& t) { t.classes_size = value; });
  // classes_offset + classes_size == end only through a wrap.
  refused([&](PackTrailer& t) {
    const uint64_t end = good.size() - kPackTrailerBytes;
    t.classes_offset = kMax - 3;
    t.classes_size = end + 4;
  });
}

TEST(HostilePack, AnUnnamedClassCountBeyondTheLabelsIsRefused) {
  const Scratch scratch("pack_class_count");
  CraftedPack pack(good_pack(scratch.dir));
  pack.trailer.classes_offset = pack.bytes.size() - kPackTrailerBytes;  // no names
  pack.trailer.classes_size = 0;
  pack.trailer.classes_crc32 = 0;
  const std::string path = (scratch.dir / "bad.pack").string();
  pack.write(path);
  EXPECT_EQ(PackSource(path, DataOrigin::train_data).num_classes(), 2);
  pack.trailer.class_count = 1u << 24;  // labels 0 and 1, no names: a 2^24-way head
  pack.write(path);
  expect_error([&] { PackSource p(path, DataOrigin::train_data); }, {path, "the trailer says 16777216 classes but names none", "up to 1"});
}

TEST(HostilePack, APackTruncatedInPlaceWhileReadIsAnErrorNamingTheFile) {
  const Scratch scratch("pack_truncated");
  const std::vector<uint8_t> good = good_pack(scratch.dir);
  const std::string path = (scratch.dir / "good.pack").string();
  const PackSource pack(path, DataOrigin::train_data);
  std::vector<uint8_t> buffer;
  EXPECT_NO_THROW(pack.read(2, buffer));
  // `truncate -s` under a running read: a mapped pack died of SIGBUS here (issue 48 item 4).
  ASSERT_EQ(::truncate(path.c_str(), 40), 0);
  expect_error([&] { pack.read(2, buffer); }, {path, "shrank while being read", "now"});
  expect_error([&] { pack.read(0, buffer); }, {path});
  // Rewritten in place with other bytes of the same size: the record's checksum catches it.
  std::vector<uint8_t> other = good;
  for (size_t i = 16; i < 64; ++i) other[i] ^= 0x5a;
  testing::write_file(path, other);
  expect_error([&] { pack.read(0, buffer); }, {path, "record 0 fails its checksum"});
}

TEST(HostilePack, PackNeverWritesOverItsOwnSource) {
  const Scratch scratch("pack_over_source");
  const std::vector<uint8_t> good = good_pack(scratch.dir);
  const std::string pack = (scratch.dir / "good.pack").string();
  PackOptions raw;
  raw.storage = PackStorage::raw;
  // ddpx pack pack:j.pack j.pack, and OUT a symlink to the source.
  fs::create_symlink(pack, scratch.dir / "link.pack");
  for (const std::string& out : {pack, (scratch.dir / "link.pack").string()})
    expect_error([&] { write_pack(PackSource(pack, DataOrigin::train_data), out, raw); }, {"OUT", out, "same file as the data pack:"});
  EXPECT_EQ(testing::read_file(pack), good);
  // ddpx pack folder:D D/c0/0.png, and a new file inside D.
  const fs::path folder = scratch.dir / "src";
  const std::vector<uint8_t> image = testing::read_file((folder / "a/0.png").string());
  for (const fs::path& out : {folder / "a/0.png", folder / "b/new.pack", folder / "new.pack"})
    expect_error([&] { write_pack(FolderSource(folder.string(), DataOrigin::train_data), out.string(), raw); },
                 {"OUT", out.string(), "is inside the data folder:"});
  EXPECT_EQ(testing::read_file((folder / "a/0.png").string()), image);
  // ddpx pack idx:D D/train-images-idx3-ubyte.
  const fs::path idx = scratch.dir / "idx";
  std::vector<uint8_t> images = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 9};
  testing::write_file((idx / "train-images-idx3-ubyte").string(), images);
  testing::write_file((idx / "train-labels-idx1-ubyte").string(), {0, 0, 8, 1, 0, 0, 0, 1, 0});
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"})
    expect_error([&] { write_pack(IdxSource(idx.string(), DataSplit::train, DataOrigin::train_data), (idx / name).string(), raw); },
                 {"OUT", name, "same file as the data's idx"});
  EXPECT_EQ(testing::read_file((idx / "train-images-idx3-ubyte").string()), images);
  EXPECT_NO_THROW(write_pack(IdxSource(idx.string(), DataSplit::train, DataOrigin::train_data), (idx / "ok.pack").string(), raw));
}

TEST(HostilePack, AClassNameWithANewlineIsRefusedAtPackTime) {
  const Scratch scratch("pack_newline");
  testing::write_file((scratch.dir / "src" / "a\nb" / "0.png").string(), fixture_png());
  testing::write_file((scratch.dir / "src" / "c" / "1.png").string(), fixture_png());
  PackOptions raw;
  raw.storage = PackStorage::raw;
  const std::string out = (scratch.dir / "x.pack").string();
  // Before: written, exit 0, then refused by its own reader as damaged (three names for two classes).
  expect_error([&] { write_pack(FolderSource((scratch.dir / "src").string(), DataOrigin::train_data), out, raw); },
               {"class name 'a\nb'", "holds a newline", "rename that class folder"});
  EXPECT_FALSE(fs::exists(out));
}

TEST(HostileFolder, ASymlinkLoopOrAFolderReachedTwiceIsRefusedNamingTheLink) {
  const Scratch scratch("folder_loops");
  for (const char* file : {"a/0.png", "b/1.png"}) testing::write_file((scratch.dir / file).string(), fixture_png());
  EXPECT_EQ(FolderSource(scratch.dir.string(), DataOrigin::train_data).size(), 2);
  // issue 48: a/loop -> . gave 84 images instead of 4; a/up -> .. labelled class b's images as a.
  fs::create_directory_symlink(".", scratch.dir / "a" / "loop");
  expect_error([&] { FolderSource s(scratch.dir.string(), DataOrigin::train_data); },
               {(scratch.dir / "a" / "loop").string(), "already read", "remove the link"});
  fs::remove(scratch.dir / "a" / "loop");
  fs::create_directory_symlink("../b", scratch.dir / "a" / "other");
  expect_error([&] { FolderSource s(scratch.dir.string(), DataOrigin::train_data); },
               {(scratch.dir / "a" / "other").string(), "already read", (scratch.dir / "b").string()});
  fs::remove(scratch.dir / "a" / "other");
  fs::create_symlink(scratch.dir / "gone.png", scratch.dir / "a" / "dangling.png");  // skipped, as before
  EXPECT_EQ(FolderSource(scratch.dir.string(), DataOrigin::train_data).size(), 2);
  fs::remove(scratch.dir / "a" / "dangling.png");
  // A link to a folder outside the tree is read (once) as part of its class, and its files count as inputs.
  testing::write_file((scratch.dir.parent_path() / ("ddpx_hostile_outside_" + std::to_string(::getpid())) / "2.png").string(),
                      fixture_png());
  const fs::path outside = scratch.dir.parent_path() / ("ddpx_hostile_outside_" + std::to_string(::getpid()));
  fs::create_directory_symlink(outside, scratch.dir / "b" / "more");
  const FolderSource linked(scratch.dir.string(), DataOrigin::train_data);
  EXPECT_EQ(linked.size(), 3);
  PackOptions raw;
  raw.storage = PackStorage::raw;
  expect_error([&] { write_pack(linked, (outside / "x.pack").string(), raw); }, {"is inside the data folder:"});
  fs::remove_all(outside);
}

// What every reader must refuse at once, naming the file: a FIFO (no writer: a plain open blocks forever), a
// device that reads without end, a folder.
struct NotAFile {
  std::string path, kind;
};
std::vector<NotAFile> not_files(const fs::path& dir, const std::string& name) {
  const std::string fifo = (dir / (name + ".fifo")).string();
  ::mkfifo(fifo.c_str(), 0600);
  fs::create_directories(dir / (name + ".dir"));
  return {{fifo, "a FIFO"}, {"/dev/zero", "a device"}, {(dir / (name + ".dir")).string(), "a folder"}};
}

TEST(HostileInputs, FifosDevicesAndFoldersAreRefusedByEveryReaderWithoutBlocking) {
  const Scratch scratch("not_files");
  for (const NotAFile& input : not_files(scratch.dir, "data")) {
    expect_error([&] { PackSource p(input.path, DataOrigin::train_data); }, {input.path, input.kind, "regular files only"});
    expect_error([&] { WdsSource w(input.path, DataOrigin::train_data); }, {input.path, input.kind});
  }
  // idx: the images file is a FIFO.
  const fs::path idx = scratch.dir / "idx";
  fs::create_directories(idx);
  ::mkfifo((idx / "train-images-idx3-ubyte").c_str(), 0600);
  testing::write_file((idx / "train-labels-idx1-ubyte").string(), {0, 0, 8, 1, 0, 0, 0, 0});
  expect_error([&] { IdxSource s(idx.string(), DataSplit::train, DataOrigin::train_data); }, {"train-images-idx3-ubyte", "a FIFO"});
  // folder: an image replaced by a FIFO after the listing (mid-run).
  const fs::path folder = scratch.dir / "folder";
  testing::write_file((folder / "a" / "0.png").string(), fixture_png());
  testing::write_file((folder / "b" / "1.png").string(), fixture_png());
  const FolderSource source(folder.string(), DataOrigin::train_data);
  fs::remove(folder / "b" / "1.png");
  ::mkfifo((folder / "b" / "1.png").c_str(), 0600);
  std::vector<uint8_t> buffer;
  const auto start = std::chrono::steady_clock::now();
  expect_error([&] { source.read(1, buffer); }, {"1.png", "a FIFO", "restore it"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// gzip (one member) of `bytes`.
std::vector<uint8_t> gzip(const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> out(compressBound(static_cast<uLong>(bytes.size())) + 64);
  z_stream stream{};
  deflateInit2(&stream, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  stream.next_in = const_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// gzip of `bytes`, then `mib` members of 1 MiB of zeros each (gzip -c a b > c: one stream, inflated whole).
std::vector<uint8_t> gzip_then_zeros(const std::vector<uint8_t>& bytes, int mib) {
  std::vector<uint8_t> out = gzip(bytes);
  const std::vector<uint8_t> zeros = gzip(std::vector<uint8_t>(1 << 20, 0));
  for (int i = 0; i < mib; ++i) out.insert(out.end(), zeros.begin(), zeros.end());
  return out;
}

std::vector<uint8_t> idx_header(std::initializer_list<uint32_t> words) {
  std::vector<uint8_t> out;
  for (uint32_t v : words)
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<uint8_t>(v >> shift));
  return out;
}

TEST(HostileIdx, AGzipFileIsInflatedOnlyAsFarAsItsHeaderSays) {
  const Scratch scratch("idx_bomb");
  // issue 48 item 5: one 28x28 image claimed, a GiB of zeros behind it (1 MB of gzip; before the bound it was
  // inflated whole: seconds and a GiB of memory; the 3 MB file took 4.4 GB and 60 s).
  const std::vector<uint8_t> gz = gzip_then_zeros(idx_header({0x803, 1, 28, 28}), 1024);
  EXPECT_LT(gz.size(), size_t{3} << 20);
  testing::write_file((scratch.dir / "train-images-idx3-ubyte.gz").string(), gz);
  std::vector<uint8_t> labels = idx_header({0x801, 1});
  labels.push_back(0);
  testing::write_file((scratch.dir / "train-labels-idx1-ubyte.gz").string(), gzip(labels));
  const auto start = std::chrono::steady_clock::now();
  expect_error([&] { IdxSource s(scratch.dir.string(), DataSplit::train, DataOrigin::train_data); },
               {"train-images-idx3-ubyte.gz", "holds more bytes than its header", "1 images of 28 x 28", "800"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  // A short file whose header claims 16 GiB: refused before inflating, not after allocating.
  testing::write_file((scratch.dir / "train-images-idx3-ubyte.gz").string(),
                      gzip(idx_header({0x803, 1u << 18, 256, 256})));
  expect_error([&] { IdxSource s(scratch.dir.string(), DataSplit::train, DataOrigin::train_data); },
               {"train-images-idx3-ubyte.gz", "its header says the file holds 17179869200 bytes", "cannot hold"});
  // The labels file too: it claims 1 label and holds a million.
  labels.resize(1 << 20, 0);

  std::vector<uint8_t> one_pixel = idx_header({0x803, 1, 1, 1});
  one_pixel.push_back(7);
  testing::write_file((scratch.dir / "train-images-idx3-ubyte.gz").string(), gzip(one_pixel));
  testing::write_file((scratch.dir / "train-labels-idx1-ubyte.gz").string(), gzip(labels));
  expect_error([&] { IdxSource s(scratch.dir.string(), DataSplit::train, DataOrigin::train_data); },
               {"train-labels-idx1-ubyte.gz", "holds 1 labels", "do not belong together"});
}

// A PNG whose iCCP chunk inflates to 256 MiB (a quarter MB of zlib): refused at libspng's 128 MiB chunk cache limit,
// naming the file (issue 48: 2 GiB were inflated, 1.2 GB and 12 s per loader thread, before it failed).
TEST(HostileImages, APngWhoseColourProfileInflatesToGigabytesIsRefusedQuickly) {
  std::vector<uint8_t> png = fixture_png();
  std::vector<uint8_t> profile(size_t{256} << 20, 0);
  uLongf packed_size = compressBound(static_cast<uLong>(profile.size()));
  std::vector<uint8_t> packed(packed_size);
  ASSERT_EQ(compress2(packed.data(), &packed_size, profile.data(), static_cast<uLong>(profile.size()), 9), Z_OK);
  profile.clear();
  profile.shrink_to_fit();
  packed.resize(packed_size);
  std::vector<uint8_t> chunk = {'i', 'C', 'C', 'P', 'x', 0, 0};  // name "x", compression method 0
  chunk.insert(chunk.end(), packed.begin(), packed.end());
  const uint32_t length = static_cast<uint32_t>(chunk.size() - 4);
  const uint32_t crc = static_cast<uint32_t>(crc32(0, chunk.data(), static_cast<uInt>(chunk.size())));
  std::vector<uint8_t> bytes = {uint8_t(length >> 24), uint8_t(length >> 16), uint8_t(length >> 8), uint8_t(length)};
  bytes.insert(bytes.end(), chunk.begin(), chunk.end());
  for (int shift : {24, 16, 8, 0}) bytes.push_back(static_cast<uint8_t>(crc >> shift));
  // The fixture's own iCCP chunk (after the signature, 8 bytes, and IHDR, 25) is replaced by this one.
  ASSERT_EQ(std::string(png.begin() + 37, png.begin() + 41), "iCCP");
  const size_t own = 12 + (size_t{png[33]} << 24 | size_t{png[34]} << 16 | size_t{png[35]} << 8 | png[36]);
  png.erase(png.begin() + 33, png.begin() + 33 + static_cast<std::ptrdiff_t>(own));
  std::vector<uint8_t> decoded;
  DecodeRequest request;
  request.choose_box = [](int h, int w) { return CropBox{0, 0, static_cast<double>(h), static_cast<double>(w)}; };
  request.max_pixels = 178956970;
  request.name = [] { return std::string("bomb.png"); };
  EXPECT_NO_THROW(decode_png(png.data(), png.size(), request, decoded));  // without a profile it decodes
  png.insert(png.begin() + 33, bytes.begin(), bytes.end());
  const auto start = std::chrono::steady_clock::now();
  expect_error([&] { decode_png(png.data(), png.size(), request, decoded); }, {"bomb.png", "PNG"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(HostileWds, AGzippedShardAndAHugeLabelAreRefusedNamingTheShard) {
  const Scratch scratch("wds_gz_label");
  const std::string path = (scratch.dir / "s.tar").string();
  const auto text = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  testing::write_file(path, gzip(testing::make_tar({{"k1.png", fixture_png()}, {"k1.cls", text("0")}})));
  expect_error([&] { WdsSource w(path, DataOrigin::train_data); }, {path, "is gzip-compressed (a .tar.gz)", "gunzip"});
  testing::write_file(path, testing::make_tar({{"k1.png", fixture_png()}, {"k1.cls", text("1073741823")}}));
  expect_error([&] { WdsSource w(path, DataOrigin::train_data); }, {path, "k1.cls holds class 1073741823, beyond the 1000000 classes"});
}

TEST(HostileWds, ABraceProductIsCappedLikeEachRange) {
  const auto start = std::chrono::steady_clock::now();
  expect_error([] { expand_braces("x{0..9999}{0..9999}.tar", DataOrigin::train_data); }, {"10000 x 10000 shard names", "check the pattern"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(expand_braces("x{0..9}{0..9}.tar", DataOrigin::train_data).size(), 100u);
}

TEST(HostileWds, ASampleWithTwoLabelsOrTwoImagesIsRefusedNamingShardAndKey) {
  const Scratch scratch("wds_duplicates");
  const std::vector<uint8_t> png = fixture_png();
  const std::string path = (scratch.dir / "s.tar").string();
  const auto text = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  testing::write_file(path, testing::make_tar({{"k1.png", png}, {"k1.cls", text("0")}, {"k1.cls", text("1")}}));
  expect_error([&] { WdsSource w(path, DataOrigin::train_data); }, {path, "the sample 'k1' has two k1.cls members"});
  testing::write_file(path, testing::make_tar({{"k1.png", png}, {"k1.jpg", png}, {"k1.cls", text("0")}}));
  expect_error([&] { WdsSource w(path, DataOrigin::train_data); }, {path, "the sample 'k1' has two images (k1.png and k1.jpg)"});
  testing::write_file(path, testing::make_tar({{"k1.png", png}, {"k1.cls", text("0")}, {"k2.png", png}, {"k2.cls", text("1")}}));
  EXPECT_EQ(WdsSource(path, DataOrigin::train_data).size(), 2);
}

}  // namespace
}  // namespace ddpx
