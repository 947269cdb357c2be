// gather_strings: every rank's string, on every rank, through the job's communicator (dist/host_collectives: host
// buffers for MPI and Gloo, device staging for NCCL). Used once per run for reports; never in the step.
#pragma once
#include <string>
#include <vector>

#include "dist/communicator.hpp"

namespace ddpx {
std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine);
}
