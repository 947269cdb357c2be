// BLAS threads per rank. OpenBLAS starts one thread per core in every process; ranks sharing a node then run
// ranks x cores busy threads on that many cores, and a CPU data-parallel job runs slower than one rank alone.
// Guarantees:
//  - choose_blas_threads(): an explicit request (--cpu-threads N > 0) wins; else a user's OPENBLAS_NUM_THREADS or
//    OMP_NUM_THREADS is left to OpenBLAS (threads = 0, source names the variable); else the node's hardware
//    threads shared out evenly by the ranks on it, at least 1 each, and never more than the CPUs this process may
//    run on (its affinity mask: mpirun binds each rank to a core, taskset and cpusets restrict it too).
//  - apply_blas_threads() sets OpenBLAS's thread count through openblas_set_num_threads, found at run time, so a
//    build linked against another BLAS still runs (it returns 0 and changes nothing there).
#pragma once
#include <functional>
#include <optional>
#include <string>

namespace ddpx {

struct BlasThreadChoice {
  int threads = 0;     // 0: leave OpenBLAS as it is
  std::string source;  // "--cpu-threads", "OPENBLAS_NUM_THREADS", "16 hardware threads / 2 ranks on this node"
};

BlasThreadChoice choose_blas_threads(int requested, int hardware_threads, int ranks_on_node, int usable_cpus,
                                     const std::function<std::optional<std::string>(const std::string&)>& env);

// The CPUs in this process's affinity mask (sched_getaffinity); the hardware threads where that is unknown.
int usable_cpu_count();

// Returns the thread count OpenBLAS reports afterwards; 0 where the BLAS has no such control.
int apply_blas_threads(int threads);

}  // namespace ddpx
