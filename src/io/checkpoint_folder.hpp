// The names ddpx owns inside a --checkpoint-dir, and how it writes them. See Note [Checkpoint folder] in
// checkpoint_folder.cpp for why.
// Guarantees:
//  - require_checkpoint_folder() refuses a folder that users other than its owner can write (the "other" write
//    bit) unless it is sticky (1777-style) and owned by this user; the error names the flag, the folder, its mode
//    and what to do. A folder that does not exist yet passes (ddpx creates it, 0777 minus the umask).
//  - CheckpointFolder opens the folder once and does everything relative to that descriptor: a new file is created
//    under a fresh name with O_CREAT | O_EXCL | O_NOFOLLOW (never through a planted link or over an existing file),
//    written, fsynced, then renamed over its final name with renameat(), which replaces a symlink planted there
//    instead of following it. Links (linkat) and removals (unlinkat) act on the names, never on what they point to.
//  - Every failing system call throws ddpx::Error naming the folder, the file and the OS reason; a file that was not
//    placed is removed (NewFile's destructor), and opening the folder removes the temporaries that processes no
//    longer running left there.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "io/posix_file.hpp"

namespace ddpx {

void require_checkpoint_folder(const std::filesystem::path& dir, std::string_view flag);

class CheckpointFolder {
 public:
  // Creates dir if needed, checks it (require_checkpoint_folder) and opens it.
  CheckpointFolder(const std::filesystem::path& dir, std::string_view flag);
  ~CheckpointFolder();
  CheckpointFolder(const CheckpointFolder&) = delete;
  CheckpointFolder& operator=(const CheckpointFolder&) = delete;

  const std::filesystem::path& path() const { return dir_; }

  // A file written and fsynced but not yet under its name: unnamed (O_TMPFILE) where the file system allows, so a
  // process killed before place() leaves nothing; else under a fresh hidden name. Destroying it unplaced removes it.
  class NewFile {
   public:
    NewFile(CheckpointFolder& folder, int fd, std::string name) : folder_(&folder), fd_(fd), name_(std::move(name)) {}
    NewFile(NewFile&& other) noexcept;
    NewFile& operator=(NewFile&& other) noexcept;
    ~NewFile();
    // Gives the file `final_name` (renameat over whatever is there, a planted link included) and fsyncs the folder.
    void place(const std::string& final_name);

   private:
    void release() noexcept;
    CheckpointFolder* folder_ = nullptr;
    int fd_ = -1;
    std::string name_;  // empty while unnamed
  };
  NewFile write_new(std::string_view final_name, const std::function<void(OutputFile&)>& write);
  // renameat(from, to) within the folder, then fsync of the folder.
  void rename(const std::string& from, const std::string& to);
  // Makes `to` name the same file as `from` (a hard link renamed into place); where the file system has no hard
  // links, a copy is written and renamed into place instead.
  void link_or_copy(const std::string& from, const std::string& to);
  void remove(const std::string& name) noexcept;
  std::vector<std::string> names() const;  // the folder's entries (no . and ..)

 private:
  int create_fresh(std::string_view final_name, std::string_view suffix, std::string& name);
  std::filesystem::path dir_;
  std::string flag_;
  int fd_ = -1;
};

}  // namespace ddpx
