// What an MPI launcher or Slurm says about the job beyond the rank variables detect_world() reads: whether MPI
// must be brought up, and where the TCP rendezvous meets when nobody exported MASTER_ADDR/MASTER_PORT.
// Guarantees of complete_job_environment() (detect_world() calls it once the rank variables are read):
//  - mpi_launched: true when an MPI launcher that Open MPI can join started this process (OMPI_COMM_WORLD_SIZE
//    from mpirun, PMIX_RANK from mpirun or `srun --mpi=pmix`) and the ranks were not given torchrun-style by a
//    launcher inside it. train and allreduce then bring up MPI, and the NCCL unique id goes over MPI_Bcast.
//    PMI-2 alone (`srun --mpi=pmi2`: PMI_RANK, PMI_SIZE, PMI_FD) does not count: Debian's and most Open MPI builds
//    abort in MPI_Init there, so NCCL meets over the TCP rendezvous instead (and MpiSession refuses it clearly).
//  - A rank variable without its size (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, in a job step SLURM_PROCID/
//    SLURM_NTASKS) is an error naming the one missing.
//  - PMIX_RANK, when set, must equal the rank read from Open MPI's or Slurm's variables: a mismatch is an error
//    naming both variables.
//  - Slurm: a process with SLURM_PROCID but neither SLURM_STEP_ID nor SLURM_STEPID is an sbatch script or an
//    salloc shell, not a task of a job step: a world of one (SLURM_NTASKS there is the allocation's, not ours).
//    In a job step, SLURM_STEP_NUM_TASKS differing from SLURM_NTASKS, or SLURM_LOCALID missing with two or more
//    tasks, is an error naming the variables. Under `srun --mpi=pmi2` (PMI variables without MPI_LOCALRANKID),
//    the local rank and the ranks per node come from SLURM_LOCALID and SLURM_STEP_TASKS_PER_NODE.
//  - Slurm without MASTER_ADDR: the first host of SLURM_STEP_NODELIST, else of SLURM_JOB_NODELIST (Slurm starts
//    task 0 there with its default block distribution; rank 0 checks SLURMD_NODENAME against it and says to
//    export MASTER_ADDR otherwise). Without MASTER_PORT: slurm_derived_port(SLURM_JOB_ID, SLURM_STEP_ID), the same
//    on every task of the step. master_origin then says where the address and port came from.
#pragma once
#include <cstdint>

#include "dist/world_info.hpp"

namespace ddpx {

void complete_job_environment(WorldInfo& world, const EnvLookup& env);

// OMPI_COMM_WORLD_SIZE or PMIX_RANK is set: an MPI launcher Open MPI can join started this process (PMI-2 alone,
// as `srun --mpi=pmi2` sets it, is not one; see mpi_launched above). The CPU backend's "auto" asks this too.
bool started_by_mpi_launcher(const EnvLookup& env);

// 19000 + 64 * (job_id mod 200) + (step_id mod 64): in 19000..31799, below Linux's ephemeral range (32768 on), so
// no outgoing connection holds it; the 64 steps of one job get distinct ports, and two jobs meet on one port only
// when their ids agree modulo 200 and they share their first node.
int slurm_derived_port(uint64_t job_id, uint64_t step_id);

}  // namespace ddpx
