// Test hook: deterministic fault injection at named phases of a run, for the multi-rank fault matrix
// (tests/train/fault_matrix.sh). It is always compiled in and does nothing unless the environment variable
// DDPX_TEST_FAULT is set; it is a test hook, not a user feature (docs/design.md, "When a rank fails").
// Guarantees:
//  - DDPX_TEST_FAULT="PHASE[@N]:RANK:KIND[:SECONDS]" makes the process whose rank is RANK (read from RANK,
//    OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID, in bootstrap's order; 0 without any) misbehave the N-th time
//    (default 1) it reaches test_fault_point(PHASE): KIND kill raises SIGKILL, stop raises SIGSTOP, sigint and
//    sigterm raise those (Ctrl-C, a scheduler's stop), slow sleeps SECONDS (default 60), throw throws
//    ddpx::Error("injected fault ..."), internal fails a DDPX_INTERNAL_ASSERT (ddpx::InternalError: the CLI's exit
//    status 4). Other processes and phases are untouched.
//  - The variable is parsed once; a malformed value is a ddpx::Error naming it at the first fault point.
//  - Cost when unset: one load of a parsed flag per call. Fault points sit at phase boundaries and in file writes,
//    never inside a step's kernels; per-step points compare an integer (test_fault_step).
// Phases used: start (before the communicator), plan (ddpx train: after the job opened, before the run's plan),
// agreement, broadcast, step-K (the K-th synchronized step this process begins; steps replayed from a CUDA graph
// do not count),
// write-<file name> (after the bytes of an atomic file replacement are written, before it is renamed in place),
// finalize (before MPI_Finalize).
#pragma once
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/internal_assert.hpp"

namespace ddpx {
namespace test_fault_detail {

struct FaultSpec {
  bool active = false;
  std::string phase;
  int64_t occurrence = 1;
  int rank = 0;
  std::string kind;
  unsigned seconds = 60;
  int64_t reached = 0;  // how often this process reached `phase` so far
  std::string error;    // non-empty: the variable was malformed
};

inline int this_process_rank() {
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return 0;
}

inline bool parse_number(std::string_view text, int64_t& value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && value >= 0;
}

inline FaultSpec parse(const char* text) {
  FaultSpec spec;
  if (text == nullptr || *text == '\0') return spec;
  std::string_view rest(text);
  std::string_view parts[4];
  int count = 0;
  while (count < 4) {
    const size_t colon = rest.find(':');
    parts[count++] = rest.substr(0, colon);
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  spec.error = std::string("DDPX_TEST_FAULT='") + text +
               "' is not PHASE[@N]:RANK:KIND[:SECONDS] with KIND kill, stop, sigint, sigterm, slow, throw or internal "
               "(a test hook)";
  if (count < 3) return spec;
  std::string_view phase = parts[0];
  if (const size_t at = phase.find('@'); at != std::string_view::npos) {
    if (!parse_number(phase.substr(at + 1), spec.occurrence) || spec.occurrence < 1) return spec;
    phase = phase.substr(0, at);
  }
  int64_t rank = 0, seconds = 60;
  if (phase.empty() || !parse_number(parts[1], rank)) return spec;
  if (count == 4 && !parse_number(parts[3], seconds)) return spec;
  if (parts[2] != "kill" && parts[2] != "stop" && parts[2] != "slow" && parts[2] != "throw" &&
      parts[2] != "internal" && parts[2] != "sigint" && parts[2] != "sigterm")
    return spec;
  spec.phase = std::string(phase);
  spec.rank = static_cast<int>(rank);
  spec.kind = std::string(parts[2]);
  spec.seconds = static_cast<unsigned>(seconds);
  spec.error.clear();
  spec.active = spec.rank == this_process_rank();
  return spec;
}

inline FaultSpec& spec() {
  static FaultSpec parsed = parse(std::getenv("DDPX_TEST_FAULT"));
  return parsed;
}

}  // namespace test_fault_detail

inline void test_fault_point(std::string_view phase) {
  test_fault_detail::FaultSpec& spec = test_fault_detail::spec();
  if (!spec.error.empty()) throw Error(spec.error);
  if (!spec.active || phase != spec.phase || ++spec.reached != spec.occurrence) return;
  if (spec.kind == "kill") ::raise(SIGKILL);
  if (spec.kind == "stop") ::raise(SIGSTOP);
  if (spec.kind == "sigint") ::raise(SIGINT);  // Ctrl-C, as the process's handler (if any) sees it
  if (spec.kind == "sigterm") ::raise(SIGTERM);
  if (spec.kind == "slow") ::sleep(spec.seconds);
  if (spec.kind == "throw") fail("rank {}: injected fault at {} (DDPX_TEST_FAULT)", spec.rank, phase);
  DDPX_INTERNAL_ASSERT(spec.kind != "internal", "rank {}: injected internal fault at {} (DDPX_TEST_FAULT)",
                       spec.rank, phase);
}

// The step-K fault point, without building a string per step.
inline void test_fault_step(int64_t step) {
  const test_fault_detail::FaultSpec& spec = test_fault_detail::spec();
  if (!spec.active || spec.phase.rfind("step-", 0) != 0) return;
  if (spec.phase == "step-" + std::to_string(step)) test_fault_point(spec.phase);
}

}  // namespace ddpx
