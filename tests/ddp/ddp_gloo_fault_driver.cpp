// ddp_gloo_fault_driver NPROC MODE TIMEOUT_S: starts NPROC ranks on loopback through ddpx's local launcher; each
// trains the toy regression with the reducer over the Gloo backend and a communication watchdog of TIMEOUT_S
// seconds (also Gloo's own timeout, as `ddpx train --comm-timeout` sets it). In step 3, after its first bucket,
// one rank misbehaves:
//   stall   rank 2 stops itself (SIGSTOP: alive, its sockets open, silent); its peers must time out and the job
//           must end non-zero (the launcher kills the stopped rank once a peer has failed)
//   throw   rank 1 throws ddpx::Error, prints it and exits 2 like the CLI does
//   kill    rank 1 is killed by SIGKILL
//   ok      nobody misbehaves; rank 0 prints "finished 10 steps"
// Used by the ddp_gloo_fault_* ctests, which expect a non-zero exit and the message for each mode.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "ddp/comm_hook_factory.hpp"
#include "ddp/reducer.hpp"
#include "dist/backend_registry.hpp"
#include "dist/bootstrap.hpp"
#include "dist/watchdog.hpp"
#include "launch/launcher.hpp"
#include "toy_regression.hpp"

namespace {

void misbehave(const std::string& mode, int rank) {
  if (mode == "stall" && rank == 2) ::raise(SIGSTOP);
  if (mode == "throw" && rank == 1) ddpx::fail("rank {}: injected failure in step 3", rank);
  if (mode == "kill" && rank == 1) ::raise(SIGKILL);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ddpx;
  if (!launched_as_worker()) {
    if (argc < 4) {
      std::fprintf(stderr, "usage: ddp_gloo_fault_driver NPROC MODE TIMEOUT_S\n");
      return 2;
    }
    LaunchOptions options;
    options.grace_period = std::chrono::seconds(1);
    return launch_local_workers(std::atoi(argv[1]), {argv[0], argv[2], argv[3]}, options);
  }
  const std::string mode = argv[1];
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(std::atof(argv[2]) * 1000));
  try {
    std::unique_ptr<Communicator> comm = make_communicator("gloo", detect_world(), std::chrono::seconds(30), timeout);
    CommWatchdog watchdog(*comm, timeout);
    testing::ToyRegression model;
    std::vector<float> params = model.initial_params(7);
    std::vector<float> grads(model.buffer_elems());
    ReducerOptions options;
    options.watchdog = watchdog;
    Reducer reducer(*comm, grads.data(), grads.size(), model.tensors(),
                    BucketPlan(model.tensors(), BucketPlanOptions{1248, 208, 4}), make_comm_hook("allreduce"),
                    options);
    for (int step = 0; step < 10; ++step) {
      std::fill(grads.begin(), grads.end(), 0.0f);
      reducer.begin_step(true);
      bool first_span = true;
      model.accumulate_gradients(params, grads.data(), step, comm->rank() * 3, 3, 1.0, [&](size_t b, size_t e) {
        if (step == 3 && !first_span) misbehave(mode, comm->rank());
        first_span = false;
        reducer.mark_ready(b, e);
      });
      reducer.finish_step();
      testing::sgd_step(params, grads, 0.05f);
    }
    if (comm->rank() == 0) std::printf("finished 10 steps\n");
  } catch (const Error& e) {
    std::fprintf(stderr, "ddpx: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
