// main() for GoogleTest programs that run as several MPI ranks (mpirun -np N test_...).
// MPI is initialized with MPI_THREAD_MULTIPLE (the CPU reducer's communication thread and the watchdog need
// it). Rank 0 prints the usual report; other ranks print only their failed assertions, prefixed "[rank k]".
// The exit status is the worst over all ranks, so a failure on any rank fails the ctest.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {

class FailureOnlyPrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailureOnlyPrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailureOnlyPrinter(rank));
  }
  int result = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && worst != result) std::printf("a test failed on another rank (see its [rank k] lines)\n");
  MPI_Finalize();
  return worst;
}
