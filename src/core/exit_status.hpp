// The exit statuses of the ddpx executable, in one place (docs/cli.md, "Exit status", and `ddpx --help` list
// them). Guarantee: each status means one kind of outcome, so scripts, launchers and bench/tune trials can tell
// "you asked for something wrong" from "a peer stalled" from "ddpx has a bug" without parsing messages.
// A launcher (`--nproc-per-node`, `--nnodes`) exits with its first failed rank's status, so these pass through.
#pragma once

namespace ddpx::exit_status {

inline constexpr int success = 0;
// ddpx's own launcher lost another node's launcher (multi-node jobs; docs/cli.md).
inline constexpr int launcher_lost = 1;
// A ddpx::Error: a bad flag, file, value or environment, or a run that failed for a reason the message names.
inline constexpr int user_error = 2;
// A collective timed out (--comm-timeout) where nothing could be unwound: the watchdog before a communicator
// existed, MPI_Finalize. Timeouts inside the run are ddpx::Errors (status 2) after the communicator is aborted.
inline constexpr int comm_timeout = 3;
// An internal invariant failed (DDPX_INTERNAL_ASSERT, core/internal_assert.hpp) or an exception escaped that no
// ddpx code raises on purpose: a bug in ddpx, to be reported.
inline constexpr int internal_error = 4;

}  // namespace ddpx::exit_status
