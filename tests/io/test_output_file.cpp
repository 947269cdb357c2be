// The file policy of io/: outputs (atomic replacement, symlinks followed, character devices in place, block
// devices, FIFOs and sockets refused), inputs (regular files only, never blocking), same-file detection, the
// folder probe and the checkpoint folder lock.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/directory_lock.hpp"
#include "io/io_test_support.hpp"
#include "io/output_file.hpp"
#include "io/posix_file.hpp"
#include "io/same_file.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

std::vector<std::string> folder_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutputFile, ReplacesARegularFileAtomicallyAndKeepsTheOldOneOnFailure) {
  TempDir dir;
  write_output_text(dir / "report.json", "--report", "first\n");
  EXPECT_EQ(read_bytes(dir / "report.json"), "first\n");
  write_output_text(dir / "report.json", "--report", "second\n");
  EXPECT_EQ(read_bytes(dir / "report.json"), "second\n");
  // A writer that fails halfway (a full disk, any exception): the old file is intact and no temporary is left.
  EXPECT_THROW(write_output_file(dir / "report.json", "--report",
                                 [](OutputFile& file) {
                                   file.write("par", 3);
                                   throw Error("disk full");
                                 }),
               Error);
  EXPECT_EQ(read_bytes(dir / "report.json"), "second\n");
  EXPECT_EQ(folder_names(dir.path()), std::vector<std::string>{"report.json"});
}

TEST(OutputFile, WritesTheTargetOfASymlinkAndKeepsTheLink) {
  TempDir dir;
  fs::create_directories(dir / "run5");
  write_bytes(dir / "run5/w.safetensors", "old");
  fs::create_symlink("run5/w.safetensors", dir / "latest.safetensors");
  write_output_text(dir / "latest.safetensors", "--save", "new");
  EXPECT_TRUE(fs::is_symlink(dir / "latest.safetensors")) << "the link was replaced by a file";
  EXPECT_EQ(read_bytes(dir / "run5/w.safetensors"), "new");
  // A dangling link is refused, naming the flag and where it points.
  fs::create_symlink("gone/w.safetensors", dir / "dangling");
  expect_error([&] { check_output_path(dir / "dangling", "--save"); }, {"--save", "gone/w.safetensors", "symlink"});
}

TEST(OutputFile, WritesCharacterDevicesInPlaceAndRefusesFifosSocketsAndFolders) {
  // /dev/null stays a device (before, rename() replaced it with a regular file when run as root).
  const OutputTarget null_target = check_output_path("/dev/null", "--save");
  EXPECT_TRUE(null_target.in_place);
  write_output_text("/dev/null", "--save", "discarded");
  struct stat info{};
  ASSERT_EQ(::stat("/dev/null", &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode));
  // /dev/full is a character device whose writes fail: the error is reported, not lost.
  if (fs::exists("/dev/full"))
    expect_error([] { write_output_text("/dev/full", "--report", std::string(1 << 16, 'x')); }, {"/dev/full"});

  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  expect_error([&] { check_output_path(dir / "fifo", "--trace"); }, {"--trace", "FIFO"});
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string socket_path = (dir / "sock").string();
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  expect_error([&] { check_output_path(socket_path, "--save"); }, {"--save", "socket"});
  ::close(sock);
  expect_error([&] { check_output_path(dir.path(), "--out"); }, {"--out", "folder"});
  expect_error([&] { check_output_path(dir / "missing/x.json", "--report"); }, {"--report", "does not exist"});
  EXPECT_TRUE(fs::is_fifo(dir / "fifo")) << "a refused FIFO must be left as it was";
}

TEST(InputFile, RefusesFifosAndDevicesWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  // No writer: a blocking open would wait forever (the test would time out instead of failing).
  expect_error([&] { InputFile file(dir / "fifo"); }, {"fifo", "FIFO"});
  expect_error([] { InputFile file("/dev/urandom"); }, {"/dev/urandom", "device"});
  expect_error([&] { read_small_file(dir / "fifo", 100, "--config"); }, {"FIFO"});
  write_bytes(dir / "big.cfg", std::string(200, 'x'));
  expect_error([&] { read_small_file(dir / "big.cfg", 100, "--config"); }, {"--config", "200 bytes", "100"});
  EXPECT_EQ(read_small_file(dir / "big.cfg", 200, "--config").size(), 200u);
}

TEST(SameFile, FindsOneFileUnderEverySpellingAndPathsNotCreatedYet) {
  TempDir dir;
  write_bytes(dir / "x.npy", "data");
  fs::create_directories(dir / "sub");
  ASSERT_EQ(::link((dir / "x.npy").c_str(), (dir / "hard.npy").c_str()), 0);
  fs::create_symlink(dir / "x.npy", dir / "soft.npy");
  const std::vector<FileRole> inputs = {{"--images", dir / "x.npy"}};
  for (const fs::path& spelling : {dir / "sub/../x.npy", dir / "hard.npy", dir / "soft.npy"}) {
    const std::vector<FileRole> outputs = {{"--save", spelling}};
    expect_error([&] { require_distinct_files(inputs, outputs); }, {"--save", "--images", "same file"});
  }
  // Two outputs that do not exist yet, spelled differently.
  const std::vector<FileRole> outputs = {{"--report", dir / "r.json"}, {"--trace", dir / "sub/../r.json"}};
  expect_error([&] { require_distinct_files({}, outputs); }, {"--report", "--trace", "same file"});
  const std::vector<FileRole> distinct = {{"--report", dir / "r.json"}, {"--trace", dir / "t.json"}};
  EXPECT_NO_THROW(require_distinct_files(inputs, distinct));
}

TEST(SameFile, AnOutputInsideAnInputFolderTreeIsRefusedHowEverItIsSpelled) {
  TempDir dir;
  fs::create_directories(dir / "data/c0/deep");
  fs::create_directories(dir / "elsewhere");
  write_bytes(dir / "data/c0/0.png", "png");
  fs::create_symlink(dir / "data/c0", dir / "link_to_c0");
  ::link((dir / "data/c0/0.png").c_str(), (dir / "elsewhere/hard.png").c_str());
  const std::vector<FileRole> inputs = {{"the data folder:D", dir / "data", FileRole::Kind::folder}};
  for (const fs::path& spelling : {dir / "data/c0/0.png", dir / "data/new.pack", dir / "data/c0/deep/new/x.json",
                                   dir / "link_to_c0/0.png", dir / "data/c0/../c0/1.png", dir / "elsewhere/hard.png"}) {
    const std::vector<FileRole> outputs = {{"OUT", spelling}};
    expect_error([&] { require_distinct_files(inputs, outputs); },
                 {"OUT", spelling.string(), "is inside the data folder:D", "choose a path outside the data folder"});
  }
  const std::vector<FileRole> outside = {{"OUT", dir / "elsewhere/new.pack"}, {"--report", dir / "r.json"}};
  EXPECT_NO_THROW(require_distinct_files(inputs, outside));
}

TEST(ProbeOutputDirectory, CreatesTheFolderOrNamesWhyItCannot) {
  TempDir dir;
  probe_output_directory(dir / "a/b/ck", "--checkpoint-dir");
  EXPECT_TRUE(fs::is_directory(dir / "a/b/ck"));
  EXPECT_TRUE(fs::is_empty(dir / "a/b/ck")) << "the probe file must be removed";
  write_bytes(dir / "notadir", "");
  expect_error([&] { probe_output_directory(dir / "notadir/ck", "--checkpoint-dir"); },
               {"--checkpoint-dir", "notadir/ck", "cannot create"});
}

TEST(DirectoryLock, ASecondHolderIsRefusedNamingThePidAndTheLockIsReleased) {
  TempDir dir;
  {
    DirectoryLock first(dir.path(), "--checkpoint-dir");
    expect_error([&] { DirectoryLock second(dir.path(), "--checkpoint-dir"); },
                 {"--checkpoint-dir", "another ddpx run", std::to_string(::getpid())});
  }
  EXPECT_NO_THROW(DirectoryLock again(dir.path(), "--checkpoint-dir"));
}

}  // namespace
}  // namespace ddpx
