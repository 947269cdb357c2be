// ProfileWindow: the steps a profiler captures, from "--profile-steps A:B" (the seed's
// torch.cuda.profiler.start()/stop() around steps 10..12, for `nsys profile --capture-range=cudaProfilerApi`).
// Guarantees: start is called once, at the first on_step_begin(step) with A <= step <= B; stop is called once,
// at the first on_step_end(step) with step >= B after a start; a window that started is stopped by finish() (or
// the destructor) if step B never came, so a short run still yields a capture. With DDPX_HAVE_CUDA the default
// actions are cudaProfilerStart/cudaProfilerStop (errors reported as ddpx::Error); without CUDA they do nothing.
// Call from the training thread.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace ddpx {

struct StepRange {
  int64_t first = 0;  // A: inclusive
  int64_t last = 0;   // B: inclusive
  bool operator==(const StepRange&) const = default;
};

// Parses "A:B" with 0 <= A <= B (a single "A" means A:A). Errors name --profile-steps and the value.
StepRange parse_profile_steps(std::string_view text);

class ProfileWindow {
 public:
  using Action = std::function<void()>;

  // No window: every call is a no-op.
  ProfileWindow() = default;
  // The CUDA profiler actions (no-ops without CUDA).
  explicit ProfileWindow(StepRange steps);
  // Custom actions (tests, or another profiler API).
  ProfileWindow(StepRange steps, Action start, Action stop);
  ~ProfileWindow();
  ProfileWindow(const ProfileWindow&) = delete;
  ProfileWindow& operator=(const ProfileWindow&) = delete;

  void on_step_begin(int64_t step);
  void on_step_end(int64_t step);
  void finish();  // stops a started, unstopped capture

  bool active() const { return started_ && !stopped_; }
  const std::optional<StepRange>& steps() const { return steps_; }

 private:
  std::optional<StepRange> steps_;
  Action start_, stop_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace ddpx
