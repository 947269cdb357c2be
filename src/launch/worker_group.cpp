// WorkerGroup: fork/exec of workers, line-prefixed output relay, reaping and the SIGTERM -> SIGKILL escalation.
#include "launch/worker_group.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "launch/child_environment.hpp"

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

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

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

}  // namespace

SignalRelay::SignalRelay(std::vector<int> signals) : signals_(std::move(signals)) {
  DDPX_INTERNAL_ASSERT(g_signal_pipe_write < 0, "launcher: only one launch may run at a time in a process");
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

SignalRelay::~SignalRelay() {
  for (size_t i = 0; i < signals_.size(); ++i) ::sigaction(signals_[i], &previous_[i], nullptr);
  g_signal_pipe_write = -1;
  ::close(pipe_[0]);
  ::close(pipe_[1]);
}

std::vector<int> SignalRelay::drain() {
  std::vector<int> received;
  unsigned char byte;
  while (::read(pipe_[0], &byte, 1) == 1) received.push_back(byte);
  return received;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int exit_code_of(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

void write_all(int fd, std::string_view text) {
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

std::string self_executable() {
  std::vector<char> path(4096);
  ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  DDPX_REQUIRE(length > 0, "launcher: cannot find this program's path (/proc/self/exe): {}", std::strerror(errno));
  return std::string(path.data(), static_cast<size_t>(length));
}

void WorkerGroup::OutputPipe::relay(std::string_view bytes, bool at_end) {
  pending.append(bytes);
  std::string out;
  auto emit = [&](std::string_view line) {
    if (!line.empty()) last_line = line;
    out += "[rank " + std::to_string(rank) + "] ";
    out += line;
    out += '\n';
  };
  size_t start = 0;
  for (size_t newline; (newline = pending.find('\n', start)) != std::string::npos; start = newline + 1)
    emit(std::string_view(pending).substr(start, newline - start));
  pending.erase(0, start);
  if (at_end && !pending.empty()) {
    emit(pending);
    pending.clear();
  }
  write_all(destination_fd, out);
}

WorkerGroup::WorkerGroup(const std::string& executable, const std::vector<std::string>& argv,
                         const std::vector<Spawn>& workers, int stdout_fd, int stderr_fd,
                         std::chrono::milliseconds grace_period)
    : workers_(workers.size()), grace_period_(grace_period) {
  for (size_t i = 0; i < workers.size(); ++i) {
    int out_pipe[2], err_pipe[2];
    DDPX_REQUIRE(::pipe2(out_pipe, O_CLOEXEC) == 0 && ::pipe2(err_pipe, O_CLOEXEC) == 0,
                 "launcher: pipe2 failed: {}", std::strerror(errno));
    Worker& worker = workers_[i];
    worker.rank = workers[i].rank;
    worker.pid = spawn(executable, argv, workers[i].environment, out_pipe[1], err_pipe[1]);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    worker.out = {out_pipe[0], worker.rank, stdout_fd, {}, {}};
    worker.err = {err_pipe[0], worker.rank, stderr_fd, {}, {}};
  }
}

WorkerGroup::~WorkerGroup() {
  // Normally everyone is reaped by now; on an exception, make sure no worker survives its launcher's return.
  for (Worker& worker : workers_) {
    if (!worker.status) {
      ::kill(worker.pid, SIGKILL);
      ::waitpid(worker.pid, nullptr, 0);
    }
    for (OutputPipe* pipe : {&worker.out, &worker.err})
      if (pipe->fd >= 0) {
        pipe->relay({}, true);
        ::close(pipe->fd);
      }
  }
}

void WorkerGroup::signal_all(int signal_number) {
  for (Worker& worker : workers_)
    if (!worker.status) ::kill(worker.pid, signal_number);
}

void WorkerGroup::stop() {
  if (kill_deadline_) return;
  signal_all(SIGTERM);
  kill_after_grace();
}

void WorkerGroup::kill_after_grace() {
  if (!kill_deadline_) kill_deadline_ = Clock::now() + grace_period_;
}

bool WorkerGroup::all_reaped() const {
  for (const Worker& worker : workers_)
    if (!worker.status) return false;
  return true;
}

bool WorkerGroup::all_succeeded() const {
  for (const Worker& worker : workers_)
    if (!worker.status || !WIFEXITED(*worker.status) || WEXITSTATUS(*worker.status) != 0) return false;
  return true;
}

bool WorkerGroup::finished() {
  if (!all_reaped()) return false;
  bool pipes_open = false;
  for (const Worker& worker : workers_) pipes_open = pipes_open || worker.out.fd >= 0 || worker.err.fd >= 0;
  if (!pipes_open) return true;
  // A worker's own children may hold its pipes open: give them a second, then stop relaying.
  if (!drain_deadline_) drain_deadline_ = Clock::now() + std::chrono::seconds(1);
  return Clock::now() > *drain_deadline_;
}

// Relays what is already in the pipe without waiting: after its writer exited, that is everything the writer
// wrote (unless a child of it still holds the pipe; the loop is bounded so such a child cannot keep us here).
void WorkerGroup::OutputPipe::drain_available() {
  for (int round = 0; fd >= 0 && round < 64; ++round) {
    pollfd waiter{fd, POLLIN, 0};
    if (::poll(&waiter, 1, 0) <= 0) return;
    char buffer[65536];
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      relay(std::string_view(buffer, static_cast<size_t>(got)), false);
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      relay({}, true);
      ::close(fd);
      fd = -1;
    }
  }
}

void WorkerGroup::reap() {
  for (Worker& worker : workers_) {
    if (worker.status) continue;
    int status = 0;
    if (::waitpid(worker.pid, &status, WNOHANG) != worker.pid) continue;
    worker.status = status;
    // Its last words are read before anyone asks for them (a verdict quotes its last stderr line).
    worker.out.drain_available();
    worker.err.drain_available();
    const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (failed && !first_failure_) first_failure_ = WorkerExit{worker.rank, status};
  }
}

std::string WorkerGroup::last_stderr_line(int rank) const {
  for (const Worker& worker : workers_)
    if (worker.rank == rank) return worker.err.last_line;
  return "";
}

void WorkerGroup::poll_once(std::vector<pollfd>& extra, int timeout_ms) {
  std::vector<pollfd> waiters = extra;
  std::vector<OutputPipe*> pipes;
  for (Worker& worker : workers_)
    for (OutputPipe* pipe : {&worker.out, &worker.err})
      if (pipe->fd >= 0) {
        waiters.push_back({pipe->fd, POLLIN, 0});
        pipes.push_back(pipe);
      }
  // Reaping is checked every 100 ms at least (SIGCHLD also wakes the caller's signal pipe, if it polls one).
  int ready = ::poll(waiters.data(), waiters.size(), std::min(timeout_ms, 100));
  if (ready < 0 && errno != EINTR) fail("launcher: poll failed: {}", std::strerror(errno));
  for (size_t i = 0; i < extra.size(); ++i) extra[i].revents = ready > 0 ? waiters[i].revents : 0;
  for (size_t i = extra.size(); ready > 0 && i < waiters.size(); ++i) {
    if (!(waiters[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    OutputPipe* pipe = pipes[i - extra.size()];
    char buffer[65536];
    ssize_t got = ::read(pipe->fd, buffer, sizeof buffer);
    if (got > 0) {
      pipe->relay(std::string_view(buffer, static_cast<size_t>(got)), false);
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      pipe->relay({}, true);
      ::close(pipe->fd);
      pipe->fd = -1;
    }
  }
  reap();
  if (kill_deadline_ && Clock::now() > *kill_deadline_) {
    signal_all(SIGKILL);
    kill_deadline_ = Clock::time_point::max();  // once
  }
}

}  // namespace ddpx
