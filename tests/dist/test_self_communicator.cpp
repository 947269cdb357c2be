// SelfCommunicator (world size 1) and the start-up agreement helpers over it.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.hpp"
#include "dist/agreement.hpp"
#include "dist/host_collectives.hpp"
#include "dist/self_communicator.hpp"

namespace ddpx {
namespace {

TEST(SelfCommunicator, ReductionsAreIdentityAndAllGatherCopies) {
  SelfCommunicator comm;
  std::vector<float> values{1.5f, -2.0f, 3.25f};
  comm.all_reduce(values.data(), values.size(), CommDType::f32, ReduceOp::avg, nullptr);
  comm.all_reduce(values.data(), values.size(), CommDType::f32, ReduceOp::sum, nullptr);
  comm.broadcast(values.data(), values.size(), CommDType::f32, 0, nullptr);
  EXPECT_EQ(values, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  std::vector<float> gathered(3, 0.0f);
  comm.all_gather(values.data(), gathered.data(), 3, CommDType::f32, nullptr);
  EXPECT_EQ(gathered, values);
  std::vector<float> reduced(3, 0.0f);
  comm.all_reduce_out_of_place(values.data(), reduced.data(), 3, CommDType::f32, ReduceOp::sum, nullptr);
  EXPECT_EQ(reduced, values);  // one rank: the sum is the input
  EXPECT_THROW(comm.broadcast(values.data(), 3, CommDType::f32, 1, nullptr), Error);
  comm.abort("test");
  EXPECT_THROW(comm.barrier(), Error);
}

TEST(SelfCommunicator, AgreementWithOneRankAlwaysHolds) {
  SelfCommunicator comm;
  EXPECT_NO_THROW(require_agreement(comm, "--model", "vit_l_32"));
  std::vector<float> params{1, 2, 3};
  broadcast_host(comm, params.data(), params.size() * sizeof(float), 0);  // the trainer's parameter broadcast
  EXPECT_EQ(params, (std::vector<float>{1, 2, 3}));
}

TEST(CommDType, SizesAndNames) {
  EXPECT_EQ(comm_dtype_size(CommDType::bf16), 2u);
  EXPECT_EQ(comm_dtype_size(CommDType::f64), 8u);
  EXPECT_EQ(comm_dtype_size(CommDType::u8), 1u);
  EXPECT_EQ(comm_dtype_name(CommDType::f16), "f16");
  EXPECT_EQ(reduce_op_name(ReduceOp::avg), "avg");
}

}  // namespace
}  // namespace ddpx
