// replace_file_atomically and unnamed output files: the bytes being written are invisible until complete, a
// stale temporary of a killed writer is replaced, and a writer killed mid-write (a forked child, SIGKILL) leaves
// the previous file intact and no temporary behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "io/posix_file.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ddpx_test_posix_file_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t entries(const fs::path& dir) { return static_cast<size_t>(std::distance(fs::directory_iterator(dir), {})); }

TEST(OutputFile, AnUnnamedFileAppearsOnlyWhenLinked) {
  const fs::path dir = fresh_dir("unnamed");
  const fs::path path = dir / ".w.tmp";
  std::ofstream(path) << "stale temporary of a killed writer";
  {
    OutputFile file(path, OutputFile::UnnamedUntilLinked{});
    file.write("new", 3);
    EXPECT_EQ(read_all(path), "stale temporary of a killed writer");  // the new bytes have no name yet
    file.sync();
    file.link();
    file.close();
  }
  EXPECT_EQ(read_all(path), "new");
  fs::remove_all(dir);
}

TEST(ReplaceFileAtomically, AWriterKilledMidWriteLeavesTheOldFileAndNoTemporary) {
  const fs::path dir = fresh_dir("killed");
  const fs::path target = dir / "w.safetensors";
  std::ofstream(target) << "previous";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    replace_file_atomically(target, dir / ".w.safetensors.tmp", [](OutputFile& file) {
      file.write("half of the new", 15);
      ::raise(SIGKILL);
    });
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(read_all(target), "previous");
  EXPECT_EQ(entries(dir), 1u);  // the target only
  replace_file_atomically(target, dir / ".w.safetensors.tmp", [](OutputFile& file) { file.write("complete", 8); });
  EXPECT_EQ(read_all(target), "complete");
  EXPECT_EQ(entries(dir), 1u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
