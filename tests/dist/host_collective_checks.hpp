// All-reduce checks that every host backend must pass exactly (MPI in test_comm_mpi.cpp, Gloo in
// test_comm_gloo.cpp): values are chosen exactly representable, so results compare exactly, 16-bit formats
// included. Each runs one collective per call on every rank of `comm`; rank_sum is the sum of the rank numbers.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/half_precision.hpp"
#include "dist/clock_offset.hpp"
#include "dist/communicator.hpp"

namespace ddpx::testing {

inline void expect_f32_sum_avg_max_exact(Communicator& comm, int rank, int world, double rank_sum) {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = rank + 0.5f * float(i);
  std::vector<float> sum = values, avg = values, max = values;
  comm.all_reduce(sum.data(), sum.size(), CommDType::f32, ReduceOp::sum, nullptr);
  comm.all_reduce(avg.data(), avg.size(), CommDType::f32, ReduceOp::avg, nullptr);
  comm.all_reduce(max.data(), max.size(), CommDType::f32, ReduceOp::max, nullptr);
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(sum[i], float(rank_sum + world * 0.5 * i)) << i;
    ASSERT_EQ(avg[i], float((rank_sum + world * 0.5 * i) / world)) << i;
    ASSERT_EQ(max[i], float(world - 1 + 0.5 * i)) << i;
  }
}

inline void expect_integer_and_double_types_exact(Communicator& comm, int rank, int world, double rank_sum) {
  std::vector<int32_t> i32{rank, 10 * rank, -rank};
  comm.all_reduce(i32.data(), i32.size(), CommDType::i32, ReduceOp::sum, nullptr);
  EXPECT_EQ(i32, (std::vector<int32_t>{int32_t(rank_sum), int32_t(10 * rank_sum), -int32_t(rank_sum)}));
  std::vector<int64_t> i64{int64_t(1) << 40, rank};
  comm.all_reduce(i64.data(), i64.size(), CommDType::i64, ReduceOp::max, nullptr);
  EXPECT_EQ(i64, (std::vector<int64_t>{int64_t(1) << 40, world - 1}));
  std::vector<double> f64{rank * 0.25};
  comm.all_reduce(f64.data(), 1, CommDType::f64, ReduceOp::avg, nullptr);
  EXPECT_EQ(f64[0], rank_sum * 0.25 / world);
  std::vector<uint8_t> u8{uint8_t(rank), 1};
  comm.all_reduce(u8.data(), 2, CommDType::u8, ReduceOp::sum, nullptr);
  EXPECT_EQ(u8, (std::vector<uint8_t>{uint8_t(rank_sum), uint8_t(world)}));
}

inline void expect_sixteen_bit_formats_exact(Communicator& comm, int rank, int world, double rank_sum) {
  std::vector<uint16_t> f16, bf16;
  for (int i = 0; i < 64; ++i) {
    f16.push_back(float_to_half(rank * 0.5f + i));
    bf16.push_back(float_to_bf16(rank * 2.0f - i));
  }
  std::vector<uint16_t> f16_max = f16;
  comm.all_reduce(f16.data(), f16.size(), CommDType::f16, ReduceOp::sum, nullptr);
  comm.all_reduce(bf16.data(), bf16.size(), CommDType::bf16, ReduceOp::avg, nullptr);
  comm.all_reduce(f16_max.data(), f16_max.size(), CommDType::f16, ReduceOp::max, nullptr);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(half_to_float(f16[i]), float(rank_sum * 0.5 + world * i)) << i;
    EXPECT_EQ(bf16_to_float(bf16[i]), float((rank_sum * 2.0 - world * i) / world)) << i;
    EXPECT_EQ(half_to_float(f16_max[i]), float((world - 1) * 0.5 + i)) << i;
  }
}

// The clock offset to rank 0 over this backend. All ranks of these tests share one host, hence one steady
// clock: the true offset is 0, and the measured bound must hold it. A clock that reads 1000 ms * rank ahead must
// come out 1000 ms * rank behind rank 0, within the same kind of bound. No timing assertion: the bound is causal.
inline void expect_clock_offset_bounds_the_truth(Communicator& comm, int rank) {
  const auto steady_ms = [] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  const ClockOffset shared = measure_clock_offset(comm, steady_ms, 8);
  EXPECT_EQ(shared.samples, 8);
  EXPECT_LE(std::abs(shared.offset_ms), shared.uncertainty_ms + 1e-9) << "rank " << rank;
  if (rank == 0) EXPECT_EQ(shared.uncertainty_ms, 0.0);
  const ClockOffset shifted = measure_clock_offset(comm, [&] { return steady_ms() + 1000.0 * rank; }, 4);
  EXPECT_LE(std::abs(shifted.offset_ms + 1000.0 * rank), shifted.uncertainty_ms + 1e-6) << "rank " << rank;
}

}  // namespace ddpx::testing
