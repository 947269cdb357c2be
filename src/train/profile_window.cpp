// Profiler capture window (see profile_window.hpp).
#include "train/profile_window.hpp"

#include <charconv>
#include <string>

#include "core/error.hpp"

#ifdef DDPX_HAVE_CUDA
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#endif

namespace ddpx {

namespace {

int64_t parse_step(std::string_view text, std::string_view whole) {
  int64_t value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  DDPX_REQUIRE(!text.empty() && ec == std::errc() && end == text.data() + text.size() && value >= 0,
               "--profile-steps '{}': '{}' is not a step number; expected A:B with 0 <= A <= B, e.g. 10:12", whole,
               text);
  return value;
}

#ifdef DDPX_HAVE_CUDA
void check(cudaError_t status, const char* call) {
  DDPX_REQUIRE(status == cudaSuccess, "{} failed for --profile-steps: {}", call, cudaGetErrorString(status));
}
#endif

}  // namespace

StepRange parse_profile_steps(std::string_view text) {
  const size_t colon = text.find(':');
  StepRange range;
  if (colon == std::string_view::npos) {
    range.first = range.last = parse_step(text, text);
  } else {
    range.first = parse_step(text.substr(0, colon), text);
    range.last = parse_step(text.substr(colon + 1), text);
  }
  DDPX_REQUIRE(range.first <= range.last, "--profile-steps '{}': the first step {} comes after the last step {}",
               text, range.first, range.last);
  return range;
}

ProfileWindow::ProfileWindow(StepRange steps)
#ifdef DDPX_HAVE_CUDA
    : ProfileWindow(steps, [] { check(cudaProfilerStart(), "cudaProfilerStart"); },
                    [] { check(cudaProfilerStop(), "cudaProfilerStop"); }) {
}
#else
    : ProfileWindow(steps, [] {}, [] {}) {
}
#endif

ProfileWindow::ProfileWindow(StepRange steps, Action start, Action stop)
    : steps_(steps), start_(std::move(start)), stop_(std::move(stop)) {
  DDPX_REQUIRE(steps.first >= 0 && steps.first <= steps.last,
               "--profile-steps {}:{}: expected 0 <= A <= B", steps.first, steps.last);
}

ProfileWindow::~ProfileWindow() {
  try {
    finish();
  } catch (...) {  // a destructor must not throw; finish() is the place to see the error
  }
}

void ProfileWindow::on_step_begin(int64_t step) {
  if (!steps_ || started_ || step < steps_->first || step > steps_->last) return;
  started_ = true;
  start_();
}

void ProfileWindow::on_step_end(int64_t step) {
  if (!steps_ || !started_ || stopped_ || step < steps_->last) return;
  stopped_ = true;
  stop_();
}

void ProfileWindow::finish() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  stop_();
}

}  // namespace ddpx
