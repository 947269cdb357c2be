// Host collectives: small control-plane exchanges (agreement checks, ids) on host memory over any backend.
// Guarantees: the caller passes and gets host memory whatever buffer_memory() the backend wants; for device
// backends the bytes are staged through a temporary device buffer and the call waits for the result (a host
// synchronization: never call these inside a step or a CUDA graph capture).
#pragma once
#include <cstddef>

#include "dist/communicator.hpp"

namespace ddpx {

// recv (host) receives size() * bytes_per_rank bytes, rank r's send at r * bytes_per_rank.
void all_gather_host(Communicator& comm, const void* send, void* recv, size_t bytes_per_rank);

// root's bytes land in buf (host) on every rank.
void broadcast_host(Communicator& comm, void* buf, size_t bytes, int root);

}  // namespace ddpx
