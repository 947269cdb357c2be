// GlooCommunicator across the ranks of a local launch on loopback (dist_gloo_2ranks, dist_gloo_4ranks): every
// collective the trainer and the hooks use, exact (values chosen exactly representable, 16-bit formats included),
// the agreement checks over it, abort(), and a peer that never joins a collective making it fail, not hang.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/half_precision.hpp"
#include "dist/agreement.hpp"
#include "dist/backend_registry.hpp"
#include "dist/bootstrap.hpp"
#include "dist/gloo_communicator.hpp"
#include "dist/host_collectives.hpp"
#include "host_collective_checks.hpp"

namespace ddpx {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Communicator> connect_gloo(std::chrono::milliseconds timeout = 30s) {
  return make_communicator("gloo", detect_world(), 30s, timeout);
}

Communicator& shared_comm() {
  static std::unique_ptr<Communicator> comm = connect_gloo();
  return *comm;
}

class GlooTest : public ::testing::Test {
 protected:
  Communicator& comm = shared_comm();
  int rank = comm.rank();
  int world = comm.size();
  double rank_sum = world * (world - 1) / 2.0;  // sum over ranks of the rank number
};

TEST_F(GlooTest, MatchesTheLaunchersWorld) {
  const WorldInfo detected = detect_world();
  EXPECT_GE(world, 2) << "run this test as test_dist_gloo N with N >= 2";
  EXPECT_EQ(world, detected.world_size);
  EXPECT_EQ(rank, detected.rank);
  EXPECT_EQ(comm.local_rank(), detected.local_rank);
  EXPECT_EQ(comm.backend_name(), "gloo");
  EXPECT_EQ(comm.buffer_memory(), BufferMemory::host);
}

TEST_F(GlooTest, AllReduceF32SumAvgMax) {
  testing::expect_f32_sum_avg_max_exact(comm, rank, world, rank_sum);
}

// Several of Gloo's 1 MiB segments and a count that is no multiple of anything: every element reduced once.
TEST_F(GlooTest, AllReduceOfManySegmentsIsExact) {
  const size_t count = 3 * (size_t{1} << 20) / 4 * 3 + 7;
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = float(int64_t(i % 4099) * (rank + 1));
  comm.all_reduce(values.data(), count, CommDType::f32, ReduceOp::sum, nullptr);
  const double factor = world * (world + 1) / 2.0;
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(values[i], float(double(i % 4099) * factor)) << i;
}

TEST_F(GlooTest, AllReduceIntegerAndDoubleTypes) {
  testing::expect_integer_and_double_types_exact(comm, rank, world, rank_sum);
}

TEST_F(GlooTest, AllReduceSixteenBitFormats) {
  testing::expect_sixteen_bit_formats_exact(comm, rank, world, rank_sum);
}

TEST_F(GlooTest, BroadcastFromANonZeroRoot) {
  const int root = world - 1;
  std::vector<float> values(100000, float(rank));
  comm.broadcast(values.data(), values.size(), CommDType::f32, root, nullptr);
  EXPECT_EQ(values, std::vector<float>(100000, float(root)));
  EXPECT_THROW(comm.broadcast(values.data(), 1, CommDType::f32, world, nullptr), Error);
  std::vector<uint8_t> bytes(3, uint8_t(rank));
  broadcast_host(comm, bytes.data(), bytes.size(), 0);
  EXPECT_EQ(bytes, std::vector<uint8_t>(3, 0));
}

TEST_F(GlooTest, ClockOffsetToRankZeroBoundsTheTruth) { testing::expect_clock_offset_bounds_the_truth(comm, rank); }

TEST_F(GlooTest, AllGatherPlacesEachRankInOrder) {
  std::vector<int32_t> send{rank * 10, rank * 10 + 1, rank * 10 + 2};
  std::vector<int32_t> recv(3 * world, -1);
  comm.all_gather(send.data(), recv.data(), 3, CommDType::i32, nullptr);
  for (int r = 0; r < world; ++r)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(recv[3 * r + j], r * 10 + j);
  // In place: the send buffer is this rank's slot of the output.
  std::vector<float> gathered(2 * world, -1.0f);
  gathered[2 * rank] = float(rank);
  gathered[2 * rank + 1] = float(rank) + 0.5f;
  comm.all_gather(gathered.data() + 2 * rank, gathered.data(), 2, CommDType::f32, nullptr);
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(gathered[2 * r], float(r));
    EXPECT_EQ(gathered[2 * r + 1], float(r) + 0.5f);
  }
  std::vector<char> bytes(2 * world);
  char mine[2] = {char('a' + rank), char('A' + rank)};
  all_gather_host(comm, mine, bytes.data(), 2);
  EXPECT_EQ(bytes[2 * (world - 1)], char('a' + world - 1));
  comm.barrier();
}

TEST_F(GlooTest, AgreementPassesAndDisagreementThrowsTheSameMessageOnEveryRank) {
  EXPECT_NO_THROW(require_agreement(comm, "--model", "vit_l_32"));
  const std::string batch = rank == 1 ? "33" : "32";
  try {
    require_agreement(comm, "--batch", batch);
    ADD_FAILURE() << "rank " << rank << " did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "ranks disagree on --batch: rank 0 has '32', rank 1 has '33'");
  }
}

TEST_F(GlooTest, AbortMakesEveryLaterCallThrow) {
  std::unique_ptr<Communicator> own = connect_gloo();
  std::vector<float> values(4, 1.0f);
  own->all_reduce(values.data(), values.size(), CommDType::f32, ReduceOp::sum, nullptr);
  EXPECT_EQ(values[0], float(world));
  own->abort("test");
  try {
    own->all_reduce(values.data(), values.size(), CommDType::f32, ReduceOp::sum, nullptr);
    ADD_FAILURE() << "all_reduce after abort() did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "gloo backend, rank " + std::to_string(rank) + ": all_reduce called after the communicator was aborted");
  }
  EXPECT_THROW(own->barrier(), Error);
  EXPECT_THROW(own->broadcast(values.data(), 1, CommDType::f32, 0, nullptr), Error);
  comm.barrier();  // the shared communicator is unaffected
}

// Rank 0 enters an all-reduce that no other rank joins: it fails after the Gloo timeout, naming the backend, the
// operation and the rank, instead of hanging. (The ctest's own timeout bounds the test if it did hang.)
TEST_F(GlooTest, ACollectiveNoPeerJoinsFailsAfterTheTimeout) {
  std::unique_ptr<Communicator> own = connect_gloo(1s);
  if (rank == 0) {
    std::vector<float> values(1000, 1.0f);
    try {
      own->all_reduce(values.data(), values.size(), CommDType::f32, ReduceOp::sum, nullptr);
      ADD_FAILURE() << "an all-reduce without peers returned";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("gloo backend, rank 0: all_reduce failed: "), std::string::npos) << message;
      EXPECT_NE(message.find("timeout of 1 s"), std::string::npos) << message;
    }
  }
  comm.barrier();
}

}  // namespace
}  // namespace ddpx
