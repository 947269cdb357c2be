// Distributed set-up for the trainer; see dist_setup.hpp.
#include "train/dist_setup.hpp"

#include <cstdlib>

#include "core/error.hpp"

namespace ddpx {

void DistContext::reducer_begin(bool, void*) {}
void DistContext::reducer_mark_ready(size_t, size_t) {}
void DistContext::reducer_finish() {}
std::string DistContext::describe() const { return "single process"; }

DistContext setup_distributed(const TrainOptions& options, const ParamLayout&) {
  DDPX_REQUIRE(!options.ddp, "--ddp: the data-parallel engine is not built into this ddpx yet");
  return DistContext{};
}

void broadcast_initial_parameters(DistContext&, const ParamLayout&, float*) {}
void attach_reducer(DistContext&, const TrainOptions&, const ParamLayout&, StepEngine&) {}

}  // namespace ddpx
