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
#include "dist/agreement.hpp"
#include "dist/bootstrap.hpp"
#include "dist/gloo_communicator.hpp"
#include "dist/half_precision.hpp"
#include "dist/host_collectives.hpp"

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

TEST_F(GlooTest, AllReduceSixteenBitFormats) {
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
