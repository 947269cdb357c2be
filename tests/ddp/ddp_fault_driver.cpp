// ddp_fault_driver MODE TIMEOUT_S: under mpirun (4 ranks), trains the toy regression with the reducer and a
// communication watchdog of TIMEOUT_S seconds; in step 3, after its first bucket, one rank misbehaves:
//   stall   rank 2 sleeps for 10 minutes (its peers must time out, abort, name rank 2, and the job must exit
//           non-zero)
//   stop    rank 2 stops itself (SIGSTOP): the same, and the peers say that rank 2's process is stopped (its
//           communication thread stops too, so the peers may still wait in bucket 0)
//   throw   rank 1 throws ddpx::Error, prints it and exits 2 like the CLI does (mpirun must end the others)
//   kill    rank 1 is killed by SIGKILL (mpirun must notice and end the job)
//   ok      nobody misbehaves; rank 0 prints "finished 10 steps"
// The watchdog reads the other ranks' heartbeat records (dist/heartbeat.hpp) to name the rank it waits for.
// Used by the ddp_fault_* ctests, which expect a non-zero exit and the message for each mode.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ddp/comm_hook_factory.hpp"
#include "core/error.hpp"
#include "ddp/reducer.hpp"
#include "dist/heartbeat.hpp"
#include "dist/mpi_communicator.hpp"
#include "dist/watchdog.hpp"
#include "toy_regression.hpp"

namespace {

void misbehave(const std::string& mode, int rank) {
  if (mode == "stall" && rank == 2) ::sleep(600);
  if (mode == "stop" && rank == 2) ::raise(SIGSTOP);
  if (mode == "throw" && rank == 1) ddpx::fail("rank {}: injected failure in step 3", rank);
  if (mode == "kill" && rank == 1) ::raise(SIGKILL);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ddpx;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const std::string mode = argc > 1 ? argv[1] : "ok";
  const double timeout_s = argc > 2 ? std::atof(argv[2]) : 3.0;
  try {
    MpiCommunicator comm;
    HeartbeatBoard board(HeartbeatBoard::job_directory(), comm.rank(), comm.size());
    CommWatchdog watchdog(comm, std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)), &board);
    testing::ToyRegression model;
    std::vector<float> params = model.initial_params(7);
    std::vector<float> grads(model.buffer_elems());
    ReducerOptions options;
    options.watchdog = watchdog;
    Reducer reducer(comm, grads.data(), grads.size(), model.tensors(),
                    BucketPlan(model.tensors(), BucketPlanOptions{1248, 208, 4}), make_comm_hook("allreduce"),
                    options);
    for (int step = 0; step < 10; ++step) {
      std::fill(grads.begin(), grads.end(), 0.0f);
      reducer.begin_step(true);
      bool first_span = true;
      model.accumulate_gradients(params, grads.data(), step, comm.rank() * 3, 3, 1.0, [&](size_t b, size_t e) {
        if (step == 3 && !first_span) misbehave(mode, comm.rank());
        first_span = false;
        reducer.mark_ready(b, e);
      });
      reducer.finish_step();
      testing::sgd_step(params, grads, 0.05f);
    }
    if (comm.rank() == 0) std::printf("finished 10 steps\n");
  } catch (const Error& e) {
    std::fprintf(stderr, "ddpx: error: %s\n", e.what());
    return 2;  // without MPI_Finalize: mpirun sees a rank exit non-zero and ends the job
  }
  MPI_Finalize();
  return 0;
}
