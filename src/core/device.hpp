// Where a run computes: the host's cores or a CUDA GPU. In core/ because both train/ (the run plan) and dist/
// (which devices a communication backend serves, dist/backend_registry.hpp) speak of it; --device's parser and
// spelling are train/run_modes.hpp's.
#pragma once

namespace ddpx {

enum class Device { cpu, cuda };

}  // namespace ddpx
