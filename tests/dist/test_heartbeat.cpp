// HeartbeatBoard: where the per-job folder is, and what a firing rank's describe_peers() says about a lagging,
// waiting, stopped (a real SIGSTOPped child) or exited peer, and about ranks without a record.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <map>
#include <string>

#include "dist/heartbeat.hpp"

namespace ddpx {
namespace {

std::filesystem::path fresh_folder(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ddpx_test_heartbeat_" + name + "_" +
                                                             std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

EnvLookup lookup(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(HeartbeatBoard, FolderComesFromTheLauncher) {
  const auto dir = fresh_folder("folder");
  EXPECT_EQ(HeartbeatBoard::job_directory(lookup({{"DDPX_HEARTBEAT_DIR", dir.string()}})), dir);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_EQ(std::filesystem::status(dir).permissions() & std::filesystem::perms::all, std::filesystem::perms::owner_all);
  std::filesystem::create_directories(dir / "session");
  EXPECT_EQ(HeartbeatBoard::job_directory(lookup({{"OMPI_MCA_orte_jobfam_session_dir", (dir / "session").string()},
                                                  {"OMPI_MCA_ess_base_jobid", "1234"}})),
            dir / "session" / "ddpx-heartbeat-1234");
  EXPECT_EQ(HeartbeatBoard::job_directory(lookup({})), std::filesystem::path());
  // A symlink where the folder should be is refused (the board is then disabled).
  std::filesystem::create_directory_symlink(dir / "session", dir / "link");
  EXPECT_EQ(HeartbeatBoard::job_directory(lookup({{"DDPX_HEARTBEAT_DIR", (dir / "link").string()}})),
            std::filesystem::path());
  std::filesystem::remove_all(dir);
}

TEST(HeartbeatBoard, NamesALaggingRankAndOneWithoutARecord) {
  const auto dir = fresh_folder("lagging");
  std::filesystem::create_directories(dir);
  HeartbeatBoard mine(dir, 0, 3), lagging(dir, 1, 3);
  lagging.enter("communicator creation");
  lagging.complete();
  mine.enter("communicator creation");
  mine.complete();
  mine.enter("the start-up agreement");
  EXPECT_EQ(mine.entered(), 2u);
  const std::string text = mine.describe_peers();
  EXPECT_EQ(text, "rank 1 has not reached it: process " + std::to_string(::getpid()) +
                      " is busy outside any collective (state R), last in collective #1 (communicator creation); "
                      "no heartbeat from rank(s) 2 on this node (not started yet, or on another node)");
}

TEST(HeartbeatBoard, ARankWaitingInAnEarlierCollectiveIsNamedOnlyWithoutACulprit) {
  const auto dir = fresh_folder("waiting");
  std::filesystem::create_directories(dir);
  HeartbeatBoard mine(dir, 0, 2), waiting(dir, 1, 2);
  waiting.enter("the broadcast of rank 0's parameters");  // entered, never completed
  mine.enter("the broadcast of rank 0's parameters");
  mine.complete();
  mine.enter("step 0");
  EXPECT_EQ(mine.describe_peers(), "rank 1 is still waiting in collective #1 (the broadcast of rank 0's parameters)");
  waiting.complete();
  waiting.enter("step 0");  // caught up: nobody to name
  EXPECT_EQ(mine.describe_peers(), "every other rank with a heartbeat on this node has reached it");
}

TEST(HeartbeatBoard, NamesAStoppedAndThenAnExitedRank) {
  const auto dir = fresh_folder("stopped");
  std::filesystem::create_directories(dir);
  HeartbeatBoard mine(dir, 0, 2);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    HeartbeatBoard peer(dir, 1, 2);
    peer.enter("step 3");
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);  // returns once the child has stopped itself
  ASSERT_TRUE(WIFSTOPPED(status));
  mine.enter("step 3");
  const std::string pid = std::to_string(child);
  EXPECT_EQ(mine.describe_peers(), "rank 1's process " + pid +
                                       " is stopped (state T: SIGSTOP or a debugger), last in collective #1 (step 3)");
  ::kill(child, SIGKILL);
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(mine.describe_peers(), "rank 1's process " + pid + " has exited, last in collective #1 (step 3)");
}

TEST(HeartbeatBoard, RecordsAndTheFolderAreRemovedAndADisabledBoardIsSilent) {
  const auto dir = fresh_folder("cleanup");
  std::filesystem::create_directories(dir);
  {
    HeartbeatBoard a(dir, 0, 2), b(dir, 1, 2);
    EXPECT_TRUE(a.enabled());
    EXPECT_TRUE(std::filesystem::exists(dir / "rank-0"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
  HeartbeatBoard disabled({}, 0, 2);
  disabled.enter("step 1");
  EXPECT_FALSE(disabled.enabled());
  EXPECT_EQ(disabled.entered(), 0u);
  EXPECT_EQ(disabled.describe_peers(), "");
}

// Issue 37 item 8: kill -9 of every rank left the board's folder and records behind for good. A board starting beside
// it removes it when only dead processes hold records there and it is a minute old; a board with a live process,
// or one created this instant, stays.
TEST(HeartbeatBoard, AStartingBoardRemovesBoardsThatOnlyDeadProcessesLeft) {
  const auto parent = fresh_folder("stale");
  std::filesystem::create_directories(parent);
  const auto dead = parent / "ddpx-heartbeat-dead", live = parent / "ddpx-heartbeat-live",
             recent = parent / "ddpx-heartbeat-recent";
  for (const auto& folder : {dead, live, recent}) std::filesystem::create_directories(folder);
  for (int rank : {0, 1}) {  // two ranks killed without their destructors running
    const pid_t child = ::fork();
    if (child == 0) {
      new HeartbeatBoard(dead, rank, 2);  // never destroyed: the record stays, as after kill -9
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
  }
  ASSERT_TRUE(std::filesystem::exists(dead / "rank-1"));
  HeartbeatBoard alive(live, 0, 2);
  const timespec old_times[2] = {{::time(nullptr) - 600, 0}, {::time(nullptr) - 600, 0}};
  for (const auto& folder : {dead, live}) ASSERT_EQ(::utimensat(AT_FDCWD, folder.c_str(), old_times, 0), 0);
  {
    HeartbeatBoard starting(parent / "ddpx-heartbeat-new", 0, 1);
    EXPECT_TRUE(starting.enabled() || !std::filesystem::exists(parent / "ddpx-heartbeat-new"));
  }
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live / "rank-0"));
  EXPECT_TRUE(std::filesystem::exists(recent));
  std::filesystem::remove_all(parent);
}

}  // namespace
}  // namespace ddpx
