// The learning-rate schedules (see lr_schedule.hpp for the semantics and guarantees).
#include "optim/lr_schedule.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <numbers>

#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx {

std::string_view lr_schedule_name(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::constant: return "constant";
    case LrScheduleKind::cosine: return "cosine";
    case LrScheduleKind::linear: return "linear";
    case LrScheduleKind::step: return "step";
    case LrScheduleKind::exponential: return "exponential";
  }
  return "?";
}

std::string_view lr_warmup_method_name(LrWarmupMethod method) {
  return method == LrWarmupMethod::constant ? "constant" : "linear";
}

std::string_view lr_step_unit_name(LrStepUnit unit) { return unit == LrStepUnit::epoch ? "epoch" : "step"; }

LrWarmupMethod parse_lr_warmup_method(std::string_view text) {
  if (text == "linear") return LrWarmupMethod::linear;
  DDPX_REQUIRE(text == "constant", "unknown --lr-warmup-method '{}'; choose linear (LinearLR from --lr-warmup-start "
               "x --lr up to --lr) or constant (ConstantLR: --lr-warmup-start x --lr through the warm-up)", text);
  return LrWarmupMethod::constant;
}

LrStepUnit parse_lr_step_unit(std::string_view text) {
  if (text == "step") return LrStepUnit::step;
  DDPX_REQUIRE(text == "epoch", "unknown --lr-step-unit '{}'; choose step (the rate changes every optimizer step) or "
               "epoch (only at epoch boundaries, as torchvision's train.py)", text);
  return LrStepUnit::epoch;
}

LrFormula LrSchedule::formula(double base_lr) const {
  LrFormula f;
  switch (kind) {
    case LrScheduleKind::constant: f.shape = LrShape::constant; break;
    case LrScheduleKind::cosine: f.shape = LrShape::cosine; break;
    case LrScheduleKind::linear: f.shape = LrShape::linear; break;
    case LrScheduleKind::step: f.shape = LrShape::step; break;
    case LrScheduleKind::exponential: f.shape = LrShape::exponential; break;
  }
  f.warmup_constant = warmup_method == LrWarmupMethod::constant;
  if (unit == LrStepUnit::epoch) {
    DDPX_INTERNAL_ASSERT(micro_batches_per_epoch >= 1 && micro_batches_per_step >= 1,
                         "a schedule stepped per epoch used before the run plan gave it the epoch's size");
    f.micro_batches_per_step = micro_batches_per_step;
    f.micro_batches_per_unit = micro_batches_per_epoch;
  }
  f.warmup_steps = warmup_steps;
  f.step_every = step_every > 0 ? step_every : 1;
  f.total_steps = total_steps;
  f.base_lr = base_lr;
  f.warmup_start_factor = warmup_start_factor;
  f.min_lr = min_lr;
  f.step_gamma = step_gamma;
  return f;
}

double LrSchedule::rate_at(double base_lr, int64_t step) const {
  DDPX_INTERNAL_ASSERT(step >= 1, "learning-rate schedule: steps start at 1, got {}", step);
  return lr_formula_at(formula(base_lr), step);  // core/lr_formula.hpp: the device's rate is the same function
}

std::string LrSchedule::describe() const {
  std::string text(lr_schedule_name(kind));
  const std::string_view units = unit == LrStepUnit::epoch ? "epochs" : "steps";
  const std::string_view at = unit == LrStepUnit::epoch ? "epoch" : "step";
  if (kind == LrScheduleKind::step) text += fmt::format(" every {} {} x{}", step_every, units, step_gamma);
  if (kind == LrScheduleKind::exponential) text += fmt::format(" x{} per {}", step_gamma, at);
  if (kind == LrScheduleKind::cosine || kind == LrScheduleKind::linear)
    text += fmt::format(" to {} at {} {}", min_lr, at, total_steps);
  if (warmup_steps > 0)  // the linear warm-up's text as before the method existed (checkpoints compare it)
    text += warmup_method == LrWarmupMethod::constant
                ? fmt::format(", constant warm-up {} {} at {}x", warmup_steps, units, warmup_start_factor)
                : fmt::format(", warm-up {} {} from {}x", warmup_steps, units, warmup_start_factor);
  if (unit == LrStepUnit::epoch) text += ", stepped per epoch";
  return text;
}

void LrSchedule::validate(double base_lr) const {
  DDPX_REQUIRE(warmup_steps >= 0, "--lr-warmup-steps must be >= 0, got {}", warmup_steps);
  // total_steps 0: not planned yet (the run plan checks the warm-up against the run's length, naming how it was given)
  DDPX_REQUIRE(warmup_steps == 0 || total_steps == 0 || warmup_steps < total_steps,
               "--lr-warmup-steps {} is not shorter than the run (--steps {}): the schedule would never reach --lr; "
               "give a warm-up of fewer steps or a longer run",
               warmup_steps, total_steps);
  DDPX_REQUIRE(std::isfinite(warmup_start_factor) && warmup_start_factor > 0 && warmup_start_factor <= 1,
               "--lr-warmup-start must be in (0, 1] (the first step's rate as a fraction of --lr), got {}",
               warmup_start_factor);
  DDPX_REQUIRE(std::isfinite(min_lr) && min_lr >= 0, "--min-lr must be a finite number >= 0, got {}", min_lr);
  DDPX_REQUIRE(min_lr <= base_lr, "--min-lr {} is above --lr {}: the schedule would raise the rate; give a smaller "
               "--min-lr", min_lr, base_lr);
  DDPX_REQUIRE(min_lr == 0 || kind == LrScheduleKind::cosine || kind == LrScheduleKind::linear,
               "--min-lr applies to --lr-schedule cosine or linear, but this run uses --lr-schedule {}",
               lr_schedule_name(kind));
  DDPX_INTERNAL_ASSERT(unit == LrStepUnit::step || total_steps == 0 ||
                           (micro_batches_per_epoch >= 1 && micro_batches_per_step >= 1),
                       "a schedule stepped per epoch planned without the epoch's size ({} micro-batches, {} a step)",
                       micro_batches_per_epoch, micro_batches_per_step);
  if (kind == LrScheduleKind::exponential)
    DDPX_REQUIRE(std::isfinite(step_gamma) && step_gamma > 0 && step_gamma <= 1,
                 "--lr-schedule exponential:{}: gamma must be in (0, 1]", step_gamma);
  if (kind == LrScheduleKind::step) {
    DDPX_REQUIRE(step_every >= 1, "--lr-schedule step:{}: the step size must be a positive number of steps",
                 step_every);
    DDPX_REQUIRE(std::isfinite(step_gamma) && step_gamma > 0 && step_gamma <= 1,
                 "--lr-schedule step:{}:{}: gamma must be in (0, 1]", step_every, step_gamma);
  }
}

namespace {

template <typename T>
bool parse_number(std::string_view text, T& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

LrSchedule parse_lr_schedule(std::string_view text) {
  LrSchedule schedule;
  const std::string_view name = text.substr(0, text.find(':'));
  const bool has_arguments = name.size() < text.size();
  if (name == "constant" || name == "cosine" || name == "linear") {
    DDPX_REQUIRE(!has_arguments, "--lr-schedule {}: '{}' takes no arguments (only step:EVERY[:GAMMA] and exponential:GAMMA do)", text,
                 name);
    schedule.kind = name == "constant" ? LrScheduleKind::constant
                    : name == "cosine" ? LrScheduleKind::cosine
                                       : LrScheduleKind::linear;
    return schedule;
  }
  if (name == "exponential") {
    schedule.kind = LrScheduleKind::exponential;
    DDPX_REQUIRE(has_arguments && parse_number(text.substr(name.size() + 1), schedule.step_gamma) &&
                     std::isfinite(schedule.step_gamma) && schedule.step_gamma > 0 && schedule.step_gamma <= 1,
                 "--lr-schedule {}: exponential needs its gamma, a number in (0, 1] the rate is multiplied by each "
                 "scheduler step (e.g. exponential:0.9)", text);
    return schedule;
  }
  DDPX_REQUIRE(name == "step", "unknown --lr-schedule '{}'; choose one of: constant, cosine, linear, "
               "step:EVERY[:GAMMA], exponential:GAMMA", text);
  schedule.kind = LrScheduleKind::step;
  const std::string_view rest = has_arguments ? text.substr(name.size() + 1) : std::string_view();
  const std::string_view every = rest.substr(0, rest.find(':'));
  DDPX_REQUIRE(parse_number(every, schedule.step_every) && schedule.step_every >= 1,
               "--lr-schedule {}: step needs a step size, a positive whole number of steps (e.g. step:1000 or "
               "step:1000:0.1)", text);
  if (every.size() < rest.size())
    DDPX_REQUIRE(parse_number(rest.substr(every.size() + 1), schedule.step_gamma) &&
                     std::isfinite(schedule.step_gamma) && schedule.step_gamma > 0 && schedule.step_gamma <= 1,
                 "--lr-schedule {}: gamma must be a number in (0, 1]", text);
  return schedule;
}

}  // namespace ddpx
