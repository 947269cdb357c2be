// Start-up agreement: every rank checks that all ranks run with the same settings before the first step, and
// rank 0's initial parameters become everyone's.
// Guarantees of require_agreement():
//  - Collective: every rank must call it with the same `what`, in the same order. Cost: one all-gather of a
//    16-byte digest (FNV-1a hash + length); a second all-gather of the values only on mismatch.
//  - On mismatch EVERY rank throws the same ddpx::Error, "ranks disagree on <what>: rank 0 has '<v0>', rank 2
//    has '<v2>'" (the first rank that differs from rank 0; values longer than 200 bytes are truncated with
//    "..."), so no rank goes on to hang in a collective the others never enter.
// broadcast_parameters() is one broadcast from rank 0 of a float buffer in the backend's memory on `stream`.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "dist/communicator.hpp"

namespace ddpx {

void require_agreement(Communicator& comm, std::string_view what, const std::string& value);

void broadcast_parameters(Communicator& comm, float* params, size_t count, void* stream);

}  // namespace ddpx
