// What a run interrupted by SIGINT (Ctrl-C) or SIGTERM (a scheduler's stop) says before it ends: one line on stderr
// with the step it reached, the newest committed checkpoint (if any) and the command that continues the run.
// Guarantees:
//  - while an InterruptNotice lives (rank 0 of a run; one at a time), SIGINT and SIGTERM write that line, then end
//    the process as the signal does by default (exit status 128 + signal: 130, 143), so launchers and shells see the
//    conventional status; the handler only write()s a buffer composed beforehand (async-signal-safe);
//  - the line is recomposed by the thread that owns the notice at every reached() and checkpoint() call, into the
//    buffer the handler is not reading (two buffers, an atomic index), so a signal at any moment prints a whole line;
//  - the destructor restores the handlers that were there before.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ddpx {

struct InterruptContext {
  int64_t total_steps = 0;
  std::string checkpoint_dir;  // --checkpoint-dir; empty: the run writes no checkpoints
  std::string continue_command;  // the command that continues from checkpoint_dir (composed by continue_command())
  bool has_resume = false;       // the run was given --resume (the same command continues)
};

// The command that continues a run from its --checkpoint-dir: the command line as typed (argv, quoted where the
// shell needs it) with --resume auto added unless it has --resume already; "" when argv is empty (run_training()
// called from code) or the run has no checkpoint folder.
std::string continue_command(const std::vector<std::string>& argv, bool has_resume, bool has_checkpoint_dir);

class InterruptNotice {
 public:
  InterruptNotice(InterruptContext context, int64_t start_step);
  ~InterruptNotice();
  InterruptNotice(const InterruptNotice&) = delete;
  InterruptNotice& operator=(const InterruptNotice&) = delete;

  void reached(int64_t step);                // `step` steps are done
  void checkpoint(int64_t step);             // a checkpoint of `step` was committed
  // The line as the handler would write it now (tests), without the signal's name.
  std::string line() const;

 private:
  void publish();
  InterruptContext context_;
  int64_t step_ = 0, checkpoint_step_ = -1;
};

}  // namespace ddpx
