// WorkerGroup: the worker processes one launcher started on its node, supervised from a poll() loop the caller
// drives (the local launcher alone, or the multi-node launcher together with its control connections).
// Guarantees:
//  - Each worker is `executable` with `argv` and its own environment, in its own process group, tied to the
//    launcher's life (PR_SET_PDEATHSIG: the kernel sends it SIGTERM if the launcher dies).
//  - Every line a worker writes is passed on whole, prefixed "[rank k] ", to stdout_fd (from its stdout) or
//    stderr_fd (from its stderr); lines of different workers never interleave mid-line.
//  - poll_once() never blocks longer than its timeout; it relays output, reaps exited workers and escalates a
//    stop() to SIGKILL once the grace period has passed. The first worker that exited non-zero or by a signal
//    is remembered (first_failure()), whoever stops the rest; by the time a worker counts as reaped, everything
//    it wrote before exiting has been relayed, so last_stderr_line() holds its last words.
// SignalRelay turns SIGINT/SIGTERM/SIGCHLD into bytes on a pipe (the handler only writes), so a poll() loop sees
// them; the previous handlers come back on destruction. One relay per process at a time.
#pragma once
#include <poll.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

class SignalRelay {
 public:
  explicit SignalRelay(std::vector<int> signals);
  ~SignalRelay();
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;
  int read_fd() const { return pipe_[0]; }
  std::vector<int> drain();  // signals received since the last call

 private:
  std::vector<int> signals_;
  std::vector<struct sigaction> previous_;
  int pipe_[2] = {-1, -1};
};

struct WorkerExit {
  int rank = 0;
  int status = 0;  // as from waitpid
};

std::string describe_status(int status);  // "exited with status 3" / "was killed by signal 9 (Killed)"
int exit_code_of(int status);              // 128 + signal when killed
void write_all(int fd, std::string_view text);
std::string self_executable();              // /proc/self/exe

class WorkerGroup {
 public:
  struct Spawn {
    int rank = 0;
    std::vector<std::string> environment;  // complete NAME=value list
  };
  WorkerGroup(const std::string& executable, const std::vector<std::string>& argv, const std::vector<Spawn>& workers,
              int stdout_fd, int stderr_fd, std::chrono::milliseconds grace_period);
  ~WorkerGroup();
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  // Waits up to timeout_ms for worker output, `extra` descriptors (their revents are filled in) or a signal byte.
  void poll_once(std::vector<pollfd>& extra, int timeout_ms);
  void signal_all(int signal_number);        // to every worker not yet reaped
  void stop();                               // SIGTERM now, then kill_after_grace()
  void kill_after_grace();                   // SIGKILL to whoever is left once the grace period has passed
  bool all_reaped() const;
  bool all_succeeded() const;                // every worker reaped with exit status 0
  bool finished();                           // reaped, and output drained (or 1 s passed since)
  const std::optional<WorkerExit>& first_failure() const { return first_failure_; }
  std::string last_stderr_line(int rank) const;  // its last non-empty stderr line so far ("" if none)
  size_t size() const { return workers_.size(); }

 private:
  struct OutputPipe {
    int fd = -1;
    int rank = 0;
    int destination_fd = 1;
    std::string pending;
    std::string last_line;
    void relay(std::string_view bytes, bool at_end);
    void drain_available();
  };
  struct Worker {
    pid_t pid = -1;
    int rank = 0;
    std::optional<int> status;
    OutputPipe out, err;
  };
  void reap();
  std::vector<Worker> workers_;
  std::chrono::milliseconds grace_period_;
  std::optional<std::chrono::steady_clock::time_point> kill_deadline_;
  std::optional<std::chrono::steady_clock::time_point> drain_deadline_;
  std::optional<WorkerExit> first_failure_;
};

}  // namespace ddpx
