// Launcher: the one-node supervision loop over a WorkerGroup (first-failure report, signal forwarding), and the
// mpirun path. Signals reach the loop through SignalRelay's self-pipe, so it is a plain poll().
#include "launch/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "dist/free_ports.hpp"
#include "launch/child_environment.hpp"
#include "launch/worker_group.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;

std::string random_token() {
  std::random_device device;
  return std::to_string(device()) + "-" + std::to_string(device()) + "-" + std::to_string(::getpid());
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

int launch_local_workers(int nproc, const std::vector<std::string>& argv_without_nproc,
                         const LaunchOptions& options) {
  DDPX_REQUIRE(nproc >= 1, "--nproc must be at least 1, got {}", nproc);
  DDPX_INTERNAL_ASSERT(!argv_without_nproc.empty(), "launcher: the worker command line is empty (argv[0] is required)");
  const std::string executable = options.executable.empty() ? self_executable() : options.executable;
  const int port = options.master_port ? options.master_port : find_free_port(options.master_addr);
  const std::string token = options.job_token.empty() ? random_token() : options.job_token;

  SignalRelay relay({SIGINT, SIGTERM, SIGCHLD});
  std::vector<WorkerGroup::Spawn> spawns;
  for (int rank = 0; rank < nproc; ++rank)
    spawns.push_back({rank, environment_with({"RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(nproc),
                                              "LOCAL_RANK=" + std::to_string(rank),
                                              "LOCAL_WORLD_SIZE=" + std::to_string(nproc),
                                              "MASTER_ADDR=" + options.master_addr,
                                              "MASTER_PORT=" + std::to_string(port), "DDPX_JOB_TOKEN=" + token,
                                              std::string(kWorkerMarker) + "=1"})});
  WorkerGroup group(executable, argv_without_nproc, spawns, options.stdout_fd, options.stderr_fd,
                    options.grace_period);

  bool interrupted = false;
  while (!group.finished()) {
    std::vector<pollfd> signals{{relay.read_fd(), POLLIN, 0}};
    group.poll_once(signals, 100);
    for (int signal_number : relay.drain()) {
      if (signal_number == SIGCHLD) continue;
      if (!group.first_failure()) interrupted = true;
      group.signal_all(signal_number);
      group.kill_after_grace();
    }
    if (group.first_failure()) group.stop();
  }

  if (interrupted) {
    write_all(options.stderr_fd, "ddpx launch: interrupted; all " + std::to_string(nproc) + " workers stopped\n");
    return 130;
  }
  if (const auto& failure = group.first_failure()) {
    std::string last_line = group.last_stderr_line(failure->rank);
    if (last_line.empty()) last_line = "(nothing on its stderr)";
    write_all(options.stderr_fd, "ddpx launch: rank " + std::to_string(failure->rank) + " " +
                                     describe_status(failure->status) + " first: " + last_line + "\n");
    return exit_code_of(failure->status) ? exit_code_of(failure->status) : 1;
  }
  return 0;
}

int launch_under_mpirun(int nproc, const std::vector<std::string>& argv_without_nproc,
                        const LaunchOptions& options) {
  DDPX_REQUIRE(nproc >= 1, "--nproc must be at least 1, got {}", nproc);
  DDPX_INTERNAL_ASSERT(!argv_without_nproc.empty(), "launcher: the worker command line is empty (argv[0] is required)");
  const std::string executable = options.executable.empty() ? self_executable() : options.executable;
  std::vector<std::string> argv{"mpirun", "-np", std::to_string(nproc), "--oversubscribe"};
  if (::getuid() == 0) argv.push_back("--allow-run-as-root");
  argv.push_back(executable);
  argv.insert(argv.end(), argv_without_nproc.begin() + 1, argv_without_nproc.end());

  // mpirun's ranks get OMPI_COMM_WORLD_*; a torchrun RANK/WORLD_SIZE left in this environment (a stray export,
  // or this launcher itself started by torchrun with one process) would win over them in detect_world().
  std::vector<std::string> env =
      environment_without({"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", kWorkerMarker});
  env.push_back(std::string(kWorkerMarker) + "=1");
  std::vector<char*> env_c = c_strings(env);
  SignalRelay relay({SIGINT, SIGTERM});
  std::vector<char*> argv_c = c_strings(argv);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  DDPX_REQUIRE(pid >= 0, "launcher: fork failed: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    die_with_parent(parent);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe("mpirun", argv_c.data(), env_c.data());
    const char message[] = "ddpx launch: cannot run mpirun (install openmpi-bin, or put mpirun on PATH)\n";
    (void)!::write(2, message, sizeof message - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  std::optional<Clock::time_point> kill_deadline;
  int interrupted_by = 0;  // the first signal forwarded (Ctrl-C: SIGINT)
  for (;;) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      // mpirun exits 1 after its ranks were interrupted, with no word of why: say it, and exit as a shell does.
      if (interrupted_by == 0) return exit_code_of(status);
      fmt::print(stderr, "ddpx launch: stopped by {} ({}): the {} CPU rank(s) under mpirun were stopped\n",
                 sigabbrev_np(interrupted_by) ? fmt::format("SIG{}", sigabbrev_np(interrupted_by)) : "a signal",
                 strsignal(interrupted_by), nproc);
      return 128 + interrupted_by;
    }
    if (done < 0 && errno != EINTR) fail("launcher: waitpid for mpirun failed: {}", std::strerror(errno));
    pollfd waiter{relay.read_fd(), POLLIN, 0};
    ::poll(&waiter, 1, 100);
    for (int signal_number : relay.drain()) {
      if (interrupted_by == 0) interrupted_by = signal_number;
      ::kill(pid, signal_number);
      if (!kill_deadline) kill_deadline = Clock::now() + options.grace_period;
    }
    // mpirun can wedge while its ranks die (PMIx "broken pipe"); after the grace period its whole process group
    // goes, as the local launcher does with stubborn workers.
    if (kill_deadline && Clock::now() > *kill_deadline) {
      ::kill(-pid, SIGKILL);
      kill_deadline.reset();
    }
  }
}

}  // namespace ddpx
