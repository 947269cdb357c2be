// gather_strings (dist/gather_strings.hpp) over a host communicator of one rank: the string comes back whole,
// empty and embedded-NUL strings included (lengths travel first, so padding never leaks into a result). The
// multi-rank path is the run report's gather in the multi-rank train tests; device staging is
// dist/host_collectives' (GPU machine).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dist/self_communicator.hpp"
#include "dist/gather_strings.hpp"

namespace ddpx {
namespace {

TEST(GatherStrings, OneRankGetsItsOwnStringBack) {
  SelfCommunicator comm(BufferMemory::host);
  EXPECT_EQ(gather_strings(comm, "NCCL, 2 ranks, hook bf16"), std::vector<std::string>{"NCCL, 2 ranks, hook bf16"});
  EXPECT_EQ(gather_strings(comm, ""), std::vector<std::string>{""});
  const std::string with_nul("a\0b", 3);
  EXPECT_EQ(gather_strings(comm, with_nul), std::vector<std::string>{with_nul});
}

}  // namespace
}  // namespace ddpx
