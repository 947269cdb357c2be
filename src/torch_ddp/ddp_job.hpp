// DdpJob: the part of ddpx::torch::DistributedDataParallel that needs no LibTorch: this process's place in the
// job, its communicator watched from the first collective on, the start-up agreement that every rank built the
// same model with the same settings, and the run report gathered from every rank's step records.
// Guarantees:
//  - The world comes from the launcher's environment (torchrun, Open MPI, Slurm, PMI, ddpx's own launcher:
//    dist/bootstrap.hpp). A process started by none of them is a world of one with the self backend, so the same
//    training loop runs alone; backend "auto" is dist/backend_registry.hpp's rule (CPU: mpi under mpirun, else
//    gloo; CUDA: nccl).
//  - Every collective here (communicator creation, the agreements, the broadcasts, the report's gather) runs under
//    the watchdog (comm_timeout): a rank that dies, stalls or never arrives ends the job within it with the
//    watchdog's message naming the rank and the collective, never a hang.
//  - require_same_model(): the model is a list of lines ("name [shape] dtype"), one per tensor. Every rank
//    throws the same ddpx::Error naming the first position whose line differs, with rank 0's line and the first
//    differing rank's; when every position the ranks share agrees, the tensor counts. Then the settings.
//  - write_report(): collective; rank 0 writes a RunReport (report/step_record.hpp) that `ddpx report` and
//    `ddpx predict` read, every rank's steps on rank 0's clock (the offsets measured at construction).
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "dist/agreement.hpp"
#include "dist/communicator.hpp"
#include "report/step_record.hpp"

namespace ddpx {

class CommWatchdog;
class HeartbeatBoard;
class MpiSession;

namespace torch {

struct DdpJobOptions {
  std::string backend = "auto";  // auto | gloo | mpi | nccl | self
  Device device = Device::cpu;
  std::chrono::milliseconds comm_timeout{std::chrono::seconds(300)};
};

class DdpJob {
 public:
  explicit DdpJob(const DdpJobOptions& options);
  ~DdpJob();
  DdpJob(const DdpJob&) = delete;
  DdpJob& operator=(const DdpJob&) = delete;

  int rank() const { return rank_; }
  int world() const { return world_; }
  Communicator& communicator() { return *communicator_; }
  CommWatchdog& watchdog() { return *watchdog_; }
  // Milliseconds on rank 0's clock since rank 0 built its job (the run clock of the report).
  double now_ms() const;

  // Collective. model_lines: one per tensor, in the module's order; settings: the options every rank must share.
  void require_same_model(const std::vector<std::string>& model_lines, const std::vector<AgreedSetting>& settings);
  // Collective: rank 0's `bytes` bytes at `data` (host memory) land on every rank.
  void broadcast_from_rank0(void* data, size_t bytes, const std::string& what);
  // Collective: every rank's string, on every rank.
  std::vector<std::string> gather_strings(const std::string& mine);
  // Collective: rank 0 writes the report of every rank's `steps` to `path` (other ranks write nothing).
  void write_report(const std::string& path, RunConfig config, const std::vector<StepRecord>& steps);

 private:
  int rank_ = 0, world_ = 1;
  Device device_ = Device::cpu;
  std::chrono::steady_clock::time_point local_start_;
  ClockAlignment clock_;
  // Declaration order is destruction order reversed: the board outlives MPI_Finalize, the watchdog the
  // communicator's last collective.
  std::shared_ptr<HeartbeatBoard> heartbeat_;
  std::shared_ptr<MpiSession> mpi_session_;
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<CommWatchdog> watchdog_;
};

}  // namespace torch
}  // namespace ddpx
