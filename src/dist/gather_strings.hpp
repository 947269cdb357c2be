// gather_strings: every rank's string, on every rank, through the job's communicator (dist/host_collectives: host
// buffers for MPI and Gloo, device staging for NCCL). Used once per run for reports (the trainer's and the LibTorch
// adapter's); never in the step. Not watched: callers run it under their watchdog.
#pragma once
#include <string>
#include <vector>

#include "dist/communicator.hpp"

namespace ddpx {
std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine);
}
