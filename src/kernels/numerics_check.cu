// The device numerics check; see numerics_check.hpp.
#include "core/cuda_check.hpp"
#include "core/kernel_launch.cuh"
#include "kernels/numerics_check.hpp"

namespace ddpx {
namespace {

constexpr unsigned long long kNone = ~0ull;

__global__ void reset_kernel(NumericsFlag* flag) {
  begin_after_producer();
  *flag = NumericsFlag{};
  flag->step_bad_offset = kNone;
  flag->first_bad_offset = kNone;
}

__global__ void check_kernel(NumericsFlag* flag, const float* loss_ptr, float divergence_ratio) {
  begin_after_producer();
  const float loss = *loss_ptr;
  const unsigned long long check = ++flag->steps_checked;
  int fault = 0;
  if (!isfinite(loss)) {
    fault = 1;
  } else if (flag->step_bad_offset != kNone) {
    fault = 2;
  } else if (flag->reference_set && divergence_ratio > 0.f &&
             loss > divergence_ratio * fmaxf(flag->reference_loss, 1.f)) {
    fault = 3;
  }
  if (!flag->reference_set && isfinite(loss)) {
    flag->reference_loss = loss;
    flag->reference_set = 1;
  }
  if (fault != 0 && flag->first_bad_check == 0) {
    flag->first_bad_check = check;
    flag->first_bad_offset = flag->step_bad_offset;
    flag->fault = fault;
    flag->bad_loss = loss;
  }
  flag->step_bad_offset = kNone;
}

}  // namespace

void numerics_flag_reset(NumericsFlag* flag, cudaStream_t stream) {
  launch_after_producer("numerics reset_kernel", reset_kernel, 1, 1, 0, stream, flag);
}

void numerics_check_step(NumericsFlag* flag, const float* loss, float divergence_ratio, cudaStream_t stream) {
  launch_after_producer("numerics check_kernel", check_kernel, 1, 1, 0, stream, flag, loss, divergence_ratio);
}

}  // namespace ddpx
