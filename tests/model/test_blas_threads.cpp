// BLAS threads per rank: the policy (explicit request, the user's environment, cores shared by the node's ranks)
// and its effect on the OpenBLAS this test is linked against.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.hpp"
#include "model/blas_threads.hpp"

namespace ddpx {
namespace {

auto env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(BlasThreads, RanksOnANodeShareItsCores) {
  EXPECT_EQ(choose_blas_threads(0, 16, 1, 16, env_of({})).threads, 16);
  const BlasThreadChoice shared = choose_blas_threads(0, 16, 4, 16, env_of({}));
  EXPECT_EQ(shared.threads, 4);
  EXPECT_EQ(shared.source, "16 hardware threads / 4 ranks on this node");
  EXPECT_EQ(choose_blas_threads(0, 2, 8, 2, env_of({})).threads, 1);  // more ranks than cores: one thread each
  EXPECT_EQ(choose_blas_threads(0, 0, 1, 0, env_of({})).threads, 1);  // hardware_concurrency() unknown
}

TEST(BlasThreads, NeverMoreThanTheCpusThisRankMayRunOn) {
  // mpirun binds each rank to one core: 16 cores / 2 ranks would be 8 threads on one core.
  const BlasThreadChoice bound = choose_blas_threads(0, 16, 2, 1, env_of({}));
  EXPECT_EQ(bound.threads, 1);
  EXPECT_EQ(bound.source, "1 CPU in this rank's affinity mask");
  EXPECT_EQ(choose_blas_threads(0, 16, 2, 12, env_of({})).threads, 8);  // the share is the tighter limit
  EXPECT_GE(usable_cpu_count(), 1);
}

TEST(BlasThreads, AnExplicitRequestWinsThenTheUsersEnvironment) {
  EXPECT_EQ(choose_blas_threads(3, 16, 4, 16, env_of({{"OPENBLAS_NUM_THREADS", "8"}})).threads, 3);
  const BlasThreadChoice user = choose_blas_threads(0, 16, 4, 16, env_of({{"OMP_NUM_THREADS", "2"}}));
  EXPECT_EQ(user.threads, 0);  // OpenBLAS already read it
  EXPECT_EQ(user.source, "OMP_NUM_THREADS=2");
  try {
    choose_blas_threads(-1, 16, 1, 16, env_of({}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--cpu-threads must be >= 0"), std::string::npos) << e.what();
  }
}

TEST(BlasThreads, OpenBlasTakesTheCount) {
  const int before = apply_blas_threads(0);
  if (before == 0) GTEST_SKIP() << "the linked BLAS has no openblas_set_num_threads";
  EXPECT_EQ(apply_blas_threads(1), 1);
  EXPECT_EQ(apply_blas_threads(before), before);
}

}  // namespace
}  // namespace ddpx
