// MpiCommunicator and the agreement checks across the ranks of an mpirun job (registered as dist_mpi_4ranks).
// Values are chosen exactly representable, so results are compared exactly, 16-bit formats included.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/half_precision.hpp"
#include "dist/agreement.hpp"
#include "dist/backend_registry.hpp"
#include "dist/bootstrap.hpp"
#include "dist/host_collectives.hpp"
#include "dist/mpi_communicator.hpp"
#include "host_collective_checks.hpp"

namespace ddpx {
namespace {

class MpiTest : public ::testing::Test {
 protected:
  MpiCommunicator comm;
  int rank = comm.rank();
  int world = comm.size();
  double rank_sum = world * (world - 1) / 2.0;  // sum over ranks of the rank number
};

TEST_F(MpiTest, MatchesMpiWorld) {
  int mpi_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  EXPECT_EQ(world, mpi_size);
  EXPECT_GE(world, 2) << "run this test with mpirun -np 4";
  EXPECT_EQ(comm.backend_name(), "mpi");
  EXPECT_EQ(comm.local_rank(), rank);  // one node: local rank = rank
  WorldInfo detected = detect_world();
  EXPECT_EQ(detected.launcher, LauncherKind::open_mpi);
  EXPECT_EQ(detected.rank, rank);
  EXPECT_EQ(make_communicator("mpi", detected)->size(), world);
}

TEST_F(MpiTest, AllReduceF32SumAvgMax) {
  testing::expect_f32_sum_avg_max_exact(comm, rank, world, rank_sum);
}

TEST_F(MpiTest, AllReduceOutOfPlaceLeavesTheInputAndFillsTheOutput) {
  std::vector<float> input(1000), sum(1000, -1.0f), avg(1000, -1.0f);
  for (size_t i = 0; i < input.size(); ++i) input[i] = rank + 0.5f * float(i);
  const std::vector<float> before = input;
  comm.all_reduce_out_of_place(input.data(), sum.data(), input.size(), CommDType::f32, ReduceOp::sum, nullptr);
  comm.all_reduce_out_of_place(input.data(), avg.data(), input.size(), CommDType::f32, ReduceOp::avg, nullptr);
  EXPECT_EQ(input, before);
  for (size_t i = 0; i < input.size(); ++i) {
    ASSERT_EQ(sum[i], float(rank_sum + world * 0.5 * i)) << i;
    ASSERT_EQ(avg[i], float((rank_sum + world * 0.5 * i) / world)) << i;
  }
}

TEST_F(MpiTest, AllReduceIntegerAndDoubleTypes) {
  testing::expect_integer_and_double_types_exact(comm, rank, world, rank_sum);
}

TEST_F(MpiTest, AllReduceSixteenBitFormats) {
  testing::expect_sixteen_bit_formats_exact(comm, rank, world, rank_sum);
}

TEST_F(MpiTest, BroadcastFromANonZeroRoot) {
  const int root = world - 1;
  std::vector<float> values(100, float(rank));
  comm.broadcast(values.data(), values.size(), CommDType::f32, root, nullptr);
  EXPECT_EQ(values, std::vector<float>(100, float(root)));
  EXPECT_THROW(comm.broadcast(values.data(), 1, CommDType::f32, world, nullptr), Error);
}

TEST_F(MpiTest, ClockOffsetToRankZeroBoundsTheTruth) { testing::expect_clock_offset_bounds_the_truth(comm, rank); }

TEST_F(MpiTest, AllGatherPlacesEachRankInOrder) {
  std::vector<int32_t> send{rank * 10, rank * 10 + 1, rank * 10 + 2};
  std::vector<int32_t> recv(3 * world, -1);
  comm.all_gather(send.data(), recv.data(), 3, CommDType::i32, nullptr);
  for (int r = 0; r < world; ++r)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(recv[3 * r + j], r * 10 + j);
  std::vector<char> bytes(2 * world);
  char mine[2] = {char('a' + rank), char('A' + rank)};
  all_gather_host(comm, mine, bytes.data(), 2);
  EXPECT_EQ(bytes[2 * (world - 1)], char('a' + world - 1));
  comm.barrier();
}

TEST_F(MpiTest, AgreementPassesWhenAllRanksAgree) {
  EXPECT_NO_THROW(require_agreement(comm, "--model", "vit_l_32"));
  EXPECT_NO_THROW(require_agreement(comm, "--comm-hook", ""));
}

TEST_F(MpiTest, DisagreementThrowsTheSameMessageOnEveryRank) {
  const std::string batch = rank == 2 || rank == 3 ? "33" : "32";
  try {
    require_agreement(comm, "--batch", batch);
    ADD_FAILURE() << "rank " << rank << " did not throw";
  } catch (const Error& e) {
    const std::string others = world > 3 ? " (ranks differing from rank 0: 2, 3)" : "";
    EXPECT_EQ(std::string(e.what()), "ranks disagree on --batch: rank 0 has '32', rank 2 has '33'" + others);
  }
  // Same length, different content; and a long value is quoted truncated.
  std::string long_value(500, 'x');
  if (rank == world - 1) long_value[499] = 'y';
  try {
    require_agreement(comm, "the bucket plan", long_value);
    ADD_FAILURE() << "rank " << rank << " did not throw";
  } catch (const Error& e) {
    const std::string expected = "ranks disagree on the bucket plan: rank 0 has '" + std::string(197, 'x') +
                                 "...', rank " + std::to_string(world - 1) + " has '" + std::string(197, 'x') +
                                 "...'";
    EXPECT_EQ(std::string(e.what()), expected);
  }
  EXPECT_NO_THROW(require_agreement(comm, "after a disagreement", "same"));  // the group stays usable
}

TEST_F(MpiTest, ATableIsAgreedInOneCollectiveAndTheFirstDifferenceIsNamed) {
  std::vector<AgreedSetting> settings{{"--model", "vit_l_32"}, {"--steps", "100"}, {"--lr", "0.01"}, {"--seed", "0"}};
  EXPECT_NO_THROW(require_agreement(comm, settings));
  if (rank == world - 1) settings[2].value = "0.1";
  if (rank == 1) settings[1].value = "99", settings[3].value = "1";
  try {
    require_agreement(comm, settings);
    ADD_FAILURE() << "rank " << rank << " did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "ranks disagree on --steps: rank 0 has '100', rank 1 has '99'; they also disagree on --lr, --seed");
  }
  // A table of another length (another build) is refused, naming both lengths.
  std::vector<AgreedSetting> longer = {{"--model", "vit_l_32"}};
  if (rank == 1) longer.push_back({"--new-flag", "x"});
  try {
    require_agreement(comm, longer);
    ADD_FAILURE() << "rank " << rank << " did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "ranks run different ddpx builds: rank 0 checks 1 start-up settings, rank 1 "
                                     "checks 2; start every rank from the same ddpx executable");
  }
  EXPECT_NO_THROW(require_agreement(comm, std::vector<AgreedSetting>{{"--lr", "same"}}));
}

TEST_F(MpiTest, BroadcastParametersMakesRankZerosCopyEveryones) {
  std::vector<float> params(257);
  for (size_t i = 0; i < params.size(); ++i) params[i] = float(rank * 1000 + int(i));
  broadcast_host(comm, params.data(), params.size() * sizeof(float), 0);  // the trainer's parameter broadcast
  for (size_t i = 0; i < params.size(); ++i) ASSERT_EQ(params[i], float(i));
}

}  // namespace
}  // namespace ddpx
