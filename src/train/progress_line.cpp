// The progress line (see progress_line.hpp).
#include "train/progress_line.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ddpx {

std::string short_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const auto whole = static_cast<int64_t>(std::llround(seconds));
  if (whole < 60) return fmt::format("{}s", whole);
  if (whole < 3600) return fmt::format("{}m{:02}s", whole / 60, whole % 60);
  return fmt::format("{}h{:02}m", whole / 3600, (whole % 3600) / 60);
}

std::string progress_line(const ProgressPoint& p) {
  const int64_t done = p.step - p.start_step;
  const std::string eta =
      done > 0 ? short_duration(p.elapsed_s / static_cast<double>(done) * static_cast<double>(p.total_steps - p.step))
               : "-";
  return fmt::format("step {:>6}/{} | loss {:.4f} | lr {:.3g} | {:8.2f} steps/s | {:9.1f} images/s | {} elapsed, ETA {}",
                     p.step, p.total_steps, p.loss, p.lr, p.steps_per_s, p.steps_per_s * p.images_per_step,
                     short_duration(p.elapsed_s), eta);
}

}  // namespace ddpx
