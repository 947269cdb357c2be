// The LibTorch adapter's job: what ddpx::torch::DistributedDataParallel does over dist/job.hpp's DistJob that
// needs no LibTorch: the job's options from DdpOptions, the start-up agreement that every rank built the same
// model with the same settings, and the run report gathered from every rank's step records.
// Guarantees:
//  - ddp_job_options(): the world comes from the launcher's environment (torchrun, Open MPI, Slurm, PMI, ddpx's
//    own launcher: dist/bootstrap.hpp). A process started by none of them is a world of one with the self
//    backend unless a backend was named, so the same training loop runs alone; backend "auto" is
//    dist/backend_registry.hpp's rule (CPU: mpi under mpirun, else gloo; CUDA: nccl). A backend name that is
//    unknown or does not serve the device is an error naming DdpOptions::backend. The current CUDA device is
//    the caller's (the module's): the job binds none.
//  - Every collective (the job's, the model check's, the report's gather) runs under the job's watchdog
//    (DdpOptions::comm_timeout_s): a rank that dies, stalls or never arrives ends the job within it with the
//    watchdog's message naming the rank and the collective, never a hang.
//  - require_same_model(): the model is a list of lines ("name [shape] dtype"), one per tensor. Every rank
//    throws the same ddpx::Error naming the first position whose line differs, with rank 0's line and the first
//    differing rank's; when every position the ranks share agrees, the tensor counts. Then the settings.
//  - write_report(): collective; rank 0 writes a RunReport (report/step_record.hpp) that `ddpx report` and
//    `ddpx predict` read, every rank's steps on rank 0's clock (the job's run clock, from its opening).
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "dist/agreement.hpp"
#include "dist/job.hpp"
#include "report/step_record.hpp"

namespace ddpx::torch {

// backend: auto | gloo | mpi | nccl | self (DdpOptions::backend).
DistJobOptions ddp_job_options(const std::string& backend, Device device, std::chrono::milliseconds comm_timeout);

// Collective. model_lines: one per tensor, in the module's order; settings: the options every rank must share.
void require_same_model(DistJob& job, const std::vector<std::string>& model_lines,
                        const std::vector<AgreedSetting>& settings);
// Collective: rank 0 writes the report of every rank's `steps` to `path` (other ranks write nothing).
void write_report(DistJob& job, Device device, const std::string& path, RunConfig config,
                  const std::vector<StepRecord>& steps);

}  // namespace ddpx::torch
