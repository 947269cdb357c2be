// HeartbeatBoard: one mmapped record per rank in a per-job folder; peers read records with pread and /proc.
#include "dist/heartbeat.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <vector>

#include "core/fnv1a.hpp"

namespace ddpx {

constexpr uint64_t kHeartbeatMagic = 0x31746165626b6864ULL;  // "dhkbeat1"
constexpr size_t kLabelBytes = 96;

// The record's layout is the file's format: plain integers and bytes, read by other processes with pread.
// `version` is odd while the owner updates entered/label (a sequence lock for the readers).
struct HeartbeatRecord {
  uint64_t magic;
  int64_t pid;
  std::atomic<uint64_t> version;
  std::atomic<uint64_t> entered;
  std::atomic<uint64_t> completed;
  std::atomic<uint64_t> timed_out;  // 1 once this rank's own watchdog fired
  char label[kLabelBytes];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "heartbeat records need lock-free 64-bit atomics");

namespace {

std::filesystem::path hashed_folder(std::string_view key) {
  std::error_code error;
  std::filesystem::path temp = std::filesystem::temp_directory_path(error);
  if (error) temp = "/tmp";
  return temp / fmt::format("ddpx-heartbeat-{:016x}", fnv1a(key));
}

// Creates the folder 0700; "" when it exists as something we must not use.
std::filesystem::path usable_folder(const std::filesystem::path& folder) {
  ::mkdir(folder.c_str(), 0700);
  struct stat info {};
  if (::lstat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid()) return {};
  return folder;
}

struct PeerView {
  bool found = false;
  int64_t pid = 0;
  uint64_t entered = 0;
  uint64_t completed = 0;
  uint64_t timed_out = 0;
  std::string label;
};

PeerView read_record(const std::filesystem::path& path) {
  PeerView view;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return view;
  alignas(HeartbeatRecord) unsigned char bytes[sizeof(HeartbeatRecord)];
  for (int attempt = 0; attempt < 3; ++attempt) {
    unsigned char again[sizeof(HeartbeatRecord)];
    if (::pread(fd, bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) break;
    if (::pread(fd, again, sizeof again, 0) != static_cast<ssize_t>(sizeof again)) break;
    uint64_t version = 0;
    std::memcpy(&version, bytes + offsetof(HeartbeatRecord, version), sizeof version);
    if (std::memcmp(bytes, again, sizeof bytes) != 0 || version % 2 != 0) continue;  // caught mid-update
    uint64_t magic = 0;
    std::memcpy(&magic, bytes + offsetof(HeartbeatRecord, magic), sizeof magic);
    if (magic != kHeartbeatMagic) break;
    view.found = true;
    std::memcpy(&view.pid, bytes + offsetof(HeartbeatRecord, pid), sizeof view.pid);
    std::memcpy(&view.entered, bytes + offsetof(HeartbeatRecord, entered), sizeof view.entered);
    std::memcpy(&view.completed, bytes + offsetof(HeartbeatRecord, completed), sizeof view.completed);
    std::memcpy(&view.timed_out, bytes + offsetof(HeartbeatRecord, timed_out), sizeof view.timed_out);
    const char* label = reinterpret_cast<const char*>(bytes + offsetof(HeartbeatRecord, label));
    view.label.assign(label, strnlen(label, kLabelBytes));
    break;
  }
  ::close(fd);
  return view;
}

// The process state letter of /proc/PID/stat (R, S, D, T, t, Z, X...); '\0' when the process does not exist.
char process_state(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!stat || !std::getline(stat, text)) return '\0';
  const size_t paren = text.rfind(") ");
  return paren == std::string::npos || paren + 2 >= text.size() ? '?' : text[paren + 2];
}

std::string collective_name(uint64_t number, const std::string& label) {
  if (number == 0) return "before its first collective";
  return fmt::format("last in collective #{} ({})", number, label);
}

// Note [Stale heartbeat boards]: every rank removes its record at exit, but kill -9 of every rank left the
// board's folder and records in $TMPDIR for good. A board starting up removes the sibling boards (ddpx-heartbeat-*
// next to its own) that are this user's, untouched for a minute, and hold only records of processes that no longer
// exist; a board being created this instant (empty, recent) or one with a live process is left alone.
void remove_stale_boards(const std::filesystem::path& own) {
  std::error_code error;
  const std::filesystem::path parent = own.parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(parent, error)) {
    const std::filesystem::path folder = entry.path();
    if (folder == own || !folder.filename().string().starts_with("ddpx-heartbeat-")) continue;
    struct stat info {};
    if (::lstat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid()) continue;
    if (::time(nullptr) - info.st_mtime < 60) continue;
    std::vector<std::filesystem::path> records;
    bool stale = true;
    std::error_code list_error;
    for (const auto& record : std::filesystem::directory_iterator(folder, list_error)) {
      const PeerView view = read_record(record.path());
      if (!record.path().filename().string().starts_with("rank-") ||
          (view.found && view.pid > 0 && process_state(view.pid) != '\0')) {
        stale = false;
        break;
      }
      records.push_back(record.path());
    }
    if (!stale || list_error) continue;
    for (const std::filesystem::path& record : records) ::unlink(record.c_str());
    ::rmdir(folder.c_str());
  }
}

}  // namespace

std::filesystem::path HeartbeatBoard::job_directory(const EnvLookup& env) {
  if (auto dir = env("DDPX_HEARTBEAT_DIR"); dir && !dir->empty()) return usable_folder(*dir);
  auto session = env("OMPI_MCA_orte_jobfam_session_dir");
  auto job = env("OMPI_MCA_ess_base_jobid");
  if (session && job && !session->empty()) return usable_folder(std::filesystem::path(*session) / ("ddpx-heartbeat-" + *job));
  if (auto token = env("DDPX_JOB_TOKEN"); token && !token->empty()) return usable_folder(hashed_folder("ddpx " + *token));
  auto slurm_job = env("SLURM_JOB_ID");
  if (slurm_job && !slurm_job->empty())
    return usable_folder(hashed_folder("slurm " + *slurm_job + "." + env("SLURM_STEP_ID").value_or("")));
  if (auto run = env("TORCHELASTIC_RUN_ID"); run && !run->empty())
    return usable_folder(hashed_folder("torchrun " + *run + " " + env("MASTER_PORT").value_or("")));
  return {};
}

HeartbeatBoard::HeartbeatBoard(const std::filesystem::path& directory, int rank, int world)
    : directory_(directory), rank_(rank), world_(world) {
  if (directory_.empty()) return;
  remove_stale_boards(directory_);  // See Note [Stale heartbeat boards]
  const std::filesystem::path path = record_path(rank_);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;  // a diagnostic aid only: without a record the peers just cannot name this rank
  void* mapped = MAP_FAILED;
  if (::ftruncate(fd, sizeof(HeartbeatRecord)) == 0)
    mapped = ::mmap(nullptr, sizeof(HeartbeatRecord), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) {
    ::unlink(path.c_str());
    return;
  }
  record_ = static_cast<HeartbeatRecord*>(mapped);  // zero-filled by ftruncate: version 0, nothing entered
  record_->pid = ::getpid();
  std::atomic_thread_fence(std::memory_order_release);
  record_->magic = kHeartbeatMagic;
}

HeartbeatBoard::~HeartbeatBoard() {
  if (!record_) return;
  ::munmap(record_, sizeof(HeartbeatRecord));
  ::unlink(record_path(rank_).c_str());
  ::rmdir(directory_.c_str());  // fails while other ranks' records remain: the last one out removes it
}

std::filesystem::path HeartbeatBoard::record_path(int rank) const {
  return directory_ / fmt::format("rank-{}", rank);
}

void HeartbeatBoard::enter(std::string_view what) {
  if (!record_) return;
  record_->version.fetch_add(1, std::memory_order_acq_rel);
  const size_t n = std::min(what.size(), kLabelBytes - 1);
  std::memcpy(record_->label, what.data(), n);
  record_->label[n] = '\0';
  record_->entered.fetch_add(1, std::memory_order_relaxed);
  record_->version.fetch_add(1, std::memory_order_acq_rel);
}

void HeartbeatBoard::enter_step(int64_t step) {
  if (!record_) return;
  char label[32];
  const int n = std::snprintf(label, sizeof label, "step %lld", static_cast<long long>(step));
  enter(std::string_view(label, n > 0 ? static_cast<size_t>(n) : 0));
}

void HeartbeatBoard::complete() {
  if (record_) record_->completed.store(record_->entered.load(std::memory_order_relaxed), std::memory_order_release);
}

void HeartbeatBoard::mark_timed_out() {
  if (record_) record_->timed_out.store(1, std::memory_order_release);
}

uint64_t HeartbeatBoard::entered() const { return record_ ? record_->entered.load(std::memory_order_acquire) : 0; }

std::string HeartbeatBoard::describe_peers() const {
  if (!record_) return "";
  const uint64_t mine = entered();
  // Culprits: ranks that exited, are stopped, or are running outside any collective below ours. Ranks blocked
  // inside an earlier collective are waiting for someone too: named only when no culprit is visible.
  std::vector<std::string> culprits, waiting;
  std::vector<int> unseen;
  for (int r = 0; r < world_; ++r) {
    if (r == rank_) continue;
    const PeerView peer = read_record(record_path(r));
    if (!peer.found) {
      unseen.push_back(r);
      continue;
    }
    if (peer.timed_out) continue;  // it gave up waiting, like us (and may have exited since): not a culprit
    const char state = process_state(peer.pid);
    const std::string where = collective_name(peer.entered, peer.label);
    if (state == '\0' || state == 'Z' || state == 'X')
      culprits.push_back(fmt::format("rank {}'s process {} has exited, {}", r, peer.pid, where));
    else if (state == 'T' || state == 't')
      culprits.push_back(fmt::format("rank {}'s process {} is stopped (state {}: SIGSTOP or a debugger), {}", r,
                                     peer.pid, state, where));
    else if (peer.entered < mine && peer.completed >= peer.entered)
      culprits.push_back(fmt::format("rank {} has not reached it: process {} is busy outside any collective "
                                     "(state {}), {}", r, peer.pid, state, where));
    else if (peer.entered < mine)
      waiting.push_back(fmt::format("rank {} is still waiting in collective #{} ({})", r, peer.entered, peer.label));
  }
  const std::vector<std::string>& named = culprits.empty() ? waiting : culprits;
  std::string text;
  for (const std::string& line : named) text += (text.empty() ? "" : "; ") + line;
  if (named.empty()) text = "every other rank with a heartbeat on this node has reached it";
  if (!unseen.empty()) {
    std::string list;
    for (int r : unseen) list += (list.empty() ? "" : ", ") + std::to_string(r);
    text += fmt::format("; no heartbeat from rank(s) {} on this node (not started yet, or on another node)", list);
  }
  return text;
}

}  // namespace ddpx
