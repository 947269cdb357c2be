// Launcher: fork/exec of workers, line-prefixed output relay, first-failure report, signal forwarding.
// Signals reach the supervision loop through a self-pipe (the handler only writes the signal number), so the
// loop is a plain poll() over the workers' pipes; the launcher's previous handlers are restored on return.
#include "dist/launcher.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>

#include "core/error.hpp"
#include "dist/child_environment.hpp"

namespace ddpx {
namespace {

using Clock = std::chrono::steady_clock;

int g_signal_pipe_write = -1;

void forward_to_pipe(int signal_number) {
  int saved_errno = errno;
  unsigned char byte = static_cast<unsigned char>(signal_number);
  if (g_signal_pipe_write >= 0) (void)!::write(g_signal_pipe_write, &byte, 1);
  errno = saved_errno;
}

// Installs forward_to_pipe for the given signals; restores the previous handlers on destruction.
class SignalRelay {
 public:
  explicit SignalRelay(std::vector<int> signals) : signals_(std::move(signals)) {
    DDPX_REQUIRE(g_signal_pipe_write < 0, "launcher: only one launch may run at a time in a process");
    DDPX_REQUIRE(::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) == 0, "launcher: pipe2 failed: {}", std::strerror(errno));
    g_signal_pipe_write = pipe_[1];
    previous_.resize(signals_.size());
    for (size_t i = 0; i < signals_.size(); ++i) {
      struct sigaction action {};
      action.sa_handler = forward_to_pipe;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESTART;
      ::sigaction(signals_[i], &action, &previous_[i]);
    }
  }
  ~SignalRelay() {
    for (size_t i = 0; i < signals_.size(); ++i) ::sigaction(signals_[i], &previous_[i], nullptr);
    g_signal_pipe_write = -1;
    ::close(pipe_[0]);
    ::close(pipe_[1]);
  }
  int read_fd() const { return pipe_[0]; }
  // Signals received since the last call.
  std::vector<int> drain() {
    std::vector<int> received;
    unsigned char byte;
    while (::read(pipe_[0], &byte, 1) == 1) received.push_back(byte);
    return received;
  }

 private:
  std::vector<int> signals_;
  std::vector<struct sigaction> previous_;
  int pipe_[2] = {-1, -1};
};

std::string self_executable() {
  std::vector<char> path(4096);
  ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  DDPX_REQUIRE(length > 0, "launcher: cannot find this program's path (/proc/self/exe): {}", std::strerror(errno));
  return std::string(path.data(), static_cast<size_t>(length));
}

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

void write_all(int fd, const std::string& text) {
  const char* cursor = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t done = ::write(fd, cursor, left);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return;
    cursor += done;
    left -= static_cast<size_t>(done);
  }
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int exit_code_of(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

// One worker's output pipe: bytes are cut into lines and relayed with the rank prefix.
struct OutputPipe {
  int fd = -1;
  int rank = 0;
  int destination_fd = 1;
  std::string pending;
  std::string last_line;

  void relay(std::string_view bytes, bool at_end) {
    pending.append(bytes);
    std::string out;
    size_t start = 0;
    for (size_t newline; (newline = pending.find('\n', start)) != std::string::npos; start = newline + 1)
      emit(std::string_view(pending).substr(start, newline - start), out);
    pending.erase(0, start);
    if (at_end && !pending.empty()) {
      emit(pending, out);
      pending.clear();
    }
    write_all(destination_fd, out);
  }
  void emit(std::string_view line, std::string& out) {
    if (!line.empty()) last_line = line;
    out += "[rank " + std::to_string(rank) + "] ";
    out += line;
    out += '\n';
  }
};

struct Worker {
  pid_t pid = -1;
  int rank = 0;
  std::optional<int> status;  // set once reaped
  OutputPipe out, err;
};

pid_t spawn(const std::string& executable, std::vector<std::string> argv, std::vector<std::string> env,
            int stdout_write, int stderr_write) {
  std::vector<char*> argv_c = c_strings(argv);
  std::vector<char*> env_c = c_strings(env);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  DDPX_REQUIRE(pid >= 0, "launcher: fork failed: {}", std::strerror(errno));
  if (pid == 0) {  // child: only async-signal-safe calls until exec
    ::setpgid(0, 0);
    die_with_parent(parent);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (stdout_write >= 0) ::dup2(stdout_write, 1);
    if (stderr_write >= 0) ::dup2(stderr_write, 2);
    ::execve(executable.c_str(), argv_c.data(), env_c.data());
    const char message[] = "ddpx launch: exec of the worker program failed\n";
    (void)!::write(2, message, sizeof message - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so signals sent right away already reach the group
  return pid;
}

void signal_all(std::vector<Worker>& workers, int signal_number) {
  for (Worker& worker : workers)
    if (!worker.status) ::kill(worker.pid, signal_number);
}

}  // namespace

int find_free_port(const std::string& address) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  DDPX_REQUIRE(fd >= 0, "launcher: cannot create a socket: {}", std::strerror(errno));
  sockaddr_in bound{};
  bound.sin_family = AF_INET;
  bound.sin_port = 0;
  int parsed = ::inet_pton(AF_INET, address.c_str(), &bound.sin_addr);
  socklen_t length = sizeof bound;
  bool ok = parsed == 1 && ::bind(fd, reinterpret_cast<sockaddr*>(&bound), sizeof bound) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0;
  ::close(fd);
  DDPX_REQUIRE(ok, "launcher: cannot find a free TCP port on '{}' (an IPv4 address is expected)", address);
  return ntohs(bound.sin_port);
}

int launch_local_workers(int nproc, const std::vector<std::string>& argv_without_nproc,
                         const LaunchOptions& options) {
  DDPX_REQUIRE(nproc >= 1, "--nproc must be at least 1, got {}", nproc);
  DDPX_REQUIRE(!argv_without_nproc.empty(), "launcher: the worker command line is empty (argv[0] is required)");
  const std::string executable = options.executable.empty() ? self_executable() : options.executable;
  const int port = options.master_port ? options.master_port : find_free_port(options.master_addr);
  const std::string token = options.job_token.empty() ? random_token() : options.job_token;

  SignalRelay relay({SIGINT, SIGTERM, SIGCHLD});
  std::vector<Worker> workers(static_cast<size_t>(nproc));
  for (int rank = 0; rank < nproc; ++rank) {
    int out_pipe[2], err_pipe[2];
    DDPX_REQUIRE(::pipe2(out_pipe, O_CLOEXEC) == 0 && ::pipe2(err_pipe, O_CLOEXEC) == 0,
                 "launcher: pipe2 failed: {}", std::strerror(errno));
    std::vector<std::string> env = environment_with(
        {"RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(nproc),
         "LOCAL_RANK=" + std::to_string(rank), "LOCAL_WORLD_SIZE=" + std::to_string(nproc),
         "MASTER_ADDR=" + options.master_addr, "MASTER_PORT=" + std::to_string(port), "DDPX_JOB_TOKEN=" + token,
         std::string(kWorkerMarker) + "=1"});
    Worker& worker = workers[static_cast<size_t>(rank)];
    worker.rank = rank;
    worker.pid = spawn(executable, argv_without_nproc, env, out_pipe[1], err_pipe[1]);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    worker.out = {out_pipe[0], rank, options.stdout_fd, {}, {}};
    worker.err = {err_pipe[0], rank, options.stderr_fd, {}, {}};
  }

  std::optional<size_t> first_failure;
  bool interrupted = false;
  std::optional<Clock::time_point> kill_deadline;
  std::optional<Clock::time_point> drain_deadline;  // pipes may be held open by a worker's own children
  for (;;) {
    std::vector<pollfd> waiters{{relay.read_fd(), POLLIN, 0}};
    std::vector<OutputPipe*> pipes;
    for (Worker& worker : workers)
      for (OutputPipe* pipe : {&worker.out, &worker.err})
        if (pipe->fd >= 0) {
          waiters.push_back({pipe->fd, POLLIN, 0});
          pipes.push_back(pipe);
        }
    bool all_reaped = true;
    for (const Worker& worker : workers) all_reaped = all_reaped && worker.status.has_value();
    if (all_reaped && (pipes.empty() || (drain_deadline && Clock::now() > *drain_deadline))) break;
    if (all_reaped && !drain_deadline) drain_deadline = Clock::now() + std::chrono::seconds(1);

    int ready = ::poll(waiters.data(), waiters.size(), 100);
    if (ready < 0 && errno != EINTR) fail("launcher: poll failed: {}", std::strerror(errno));
    for (size_t i = 1; ready > 0 && i < waiters.size(); ++i) {
      if (!(waiters[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      ssize_t got = ::read(pipes[i - 1]->fd, buffer, sizeof buffer);
      if (got > 0) {
        pipes[i - 1]->relay(std::string_view(buffer, static_cast<size_t>(got)), false);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        pipes[i - 1]->relay({}, true);
        ::close(pipes[i - 1]->fd);
        pipes[i - 1]->fd = -1;
      }
    }
    for (int signal_number : relay.drain()) {
      if (signal_number == SIGCHLD) continue;
      interrupted = true;
      signal_all(workers, signal_number);
      if (!kill_deadline) kill_deadline = Clock::now() + options.grace_period;
    }
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& worker = workers[i];
      if (worker.status) continue;
      int status = 0;
      if (::waitpid(worker.pid, &status, WNOHANG) != worker.pid) continue;
      worker.status = status;
      bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && !first_failure && !interrupted) {
        first_failure = i;
        signal_all(workers, SIGTERM);
        kill_deadline = Clock::now() + options.grace_period;
      }
    }
    if (kill_deadline && Clock::now() > *kill_deadline) {
      signal_all(workers, SIGKILL);
      kill_deadline.reset();
    }
  }
  for (Worker& worker : workers)
    for (OutputPipe* pipe : {&worker.out, &worker.err})
      if (pipe->fd >= 0) {
        pipe->relay({}, true);
        ::close(pipe->fd);
      }

  if (first_failure) {
    const Worker& worker = workers[*first_failure];
    std::string last_line = worker.err.last_line.empty() ? "(nothing on its stderr)" : worker.err.last_line;
    write_all(options.stderr_fd, "ddpx launch: rank " + std::to_string(worker.rank) + " " +
                                     describe_status(*worker.status) + " first: " + last_line + "\n");
    return exit_code_of(*worker.status) ? exit_code_of(*worker.status) : 1;
  }
  if (interrupted) {
    write_all(options.stderr_fd, "ddpx launch: interrupted; all " + std::to_string(nproc) + " workers stopped\n");
    return 130;
  }
  for (const Worker& worker : workers)
    if (exit_code_of(*worker.status) != 0) return exit_code_of(*worker.status);
  return 0;
}

int launch_under_mpirun(int nproc, const std::vector<std::string>& argv_without_nproc,
                        const LaunchOptions& options) {
  DDPX_REQUIRE(nproc >= 1, "--nproc must be at least 1, got {}", nproc);
  DDPX_REQUIRE(!argv_without_nproc.empty(), "launcher: the worker command line is empty (argv[0] is required)");
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
