// NcclCommunicator: NCCL collectives on the caller's stream; abort through ncclCommAbort.
#include "dist/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

#include "core/error.hpp"

namespace ddpx {
namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueIdBytes), "NCCL_UNIQUE_ID_BYTES changed");

ncclDataType_t nccl_type(CommDType dtype) {
  switch (dtype) {
    case CommDType::f32: return ncclFloat32;
    case CommDType::f16: return ncclFloat16;
    case CommDType::bf16: return ncclBfloat16;
    case CommDType::f64: return ncclFloat64;
    case CommDType::i32: return ncclInt32;
    case CommDType::i64: return ncclInt64;
    case CommDType::u8: return ncclUint8;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::max: return ncclMax;
  }
  return ncclSum;
}

ncclComm_t as_comm(void* comm) { return static_cast<ncclComm_t>(comm); }
cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

NcclUniqueIdBytes NcclCommunicator::new_unique_id() {
  ncclUniqueId id;
  ncclResult_t result = ncclGetUniqueId(&id);
  DDPX_REQUIRE(result == ncclSuccess, "nccl backend: ncclGetUniqueId failed: {} (is a network interface up? "
                                      "NCCL_SOCKET_IFNAME selects one)", ncclGetErrorString(result));
  NcclUniqueIdBytes bytes;
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

NcclCommunicator::NcclCommunicator(const NcclUniqueIdBytes& id, int rank, int size, int local_rank)
    : RankedCommunicator("nccl", BufferMemory::cuda, rank, size, local_rank) {
  DDPX_REQUIRE(size >= 1 && rank >= 0 && rank < size, "nccl backend: rank {} is not within a world of size {}",
               rank, size);
  DDPX_REQUIRE(cudaGetDevice(&device_) == cudaSuccess, "nccl backend, rank {}: no current CUDA device", rank);
  ncclUniqueId nccl_id;
  std::memcpy(&nccl_id, id.data(), sizeof nccl_id);
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclCommInitRank(&comm, size, nccl_id, rank);
  DDPX_REQUIRE(result == ncclSuccess,
               "nccl backend, rank {}: ncclCommInitRank (world size {}) failed: {} {} (run with NCCL_DEBUG=INFO "
               "for NCCL's own log)", rank, size, ncclGetErrorString(result), ncclGetLastError(nullptr));
  comm_ = comm;
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ && !aborted_) ncclCommDestroy(as_comm(comm_));
}

void NcclCommunicator::check(int result, std::string_view operation) const {
  if (result == ncclSuccess) return;
  fail("nccl backend, rank {}: {} failed: {} {}", rank_, operation,
       ncclGetErrorString(static_cast<ncclResult_t>(result)), ncclGetLastError(as_comm(comm_)));
}

void NcclCommunicator::all_reduce(void* buf, size_t count, CommDType dtype, ReduceOp op, void* stream) {
  DDPX_REQUIRE(!aborted_, "nccl backend, rank {}: all_reduce after the communicator was aborted", rank_);
  check(ncclAllReduce(buf, buf, count, nccl_type(dtype), nccl_op(op), as_comm(comm_), as_stream(stream)),
        "ncclAllReduce");
}

void NcclCommunicator::all_reduce_out_of_place(const void* send, void* recv, size_t count, CommDType dtype,
                                               ReduceOp op, void* stream) {
  DDPX_REQUIRE(!aborted_, "nccl backend, rank {}: all_reduce after the communicator was aborted", rank_);
  check(ncclAllReduce(send, recv, count, nccl_type(dtype), nccl_op(op), as_comm(comm_), as_stream(stream)),
        "ncclAllReduce");
}

void NcclCommunicator::broadcast(void* buf, size_t count, CommDType dtype, int root, void* stream) {
  DDPX_REQUIRE(!aborted_, "nccl backend, rank {}: broadcast after the communicator was aborted", rank_);
  DDPX_REQUIRE(root >= 0 && root < size_, "nccl backend: broadcast root {} is not a rank of this {}-rank group",
               root, size_);
  check(ncclBroadcast(buf, buf, count, nccl_type(dtype), root, as_comm(comm_), as_stream(stream)), "ncclBroadcast");
}

void NcclCommunicator::all_gather(const void* send, void* recv, size_t count_per_rank, CommDType dtype,
                                  void* stream) {
  DDPX_REQUIRE(!aborted_, "nccl backend, rank {}: all_gather after the communicator was aborted", rank_);
  check(ncclAllGather(send, recv, count_per_rank, nccl_type(dtype), as_comm(comm_), as_stream(stream)),
        "ncclAllGather");
}

void NcclCommunicator::barrier() {
  // NCCL has no barrier: a one-element all-reduce on a private stream, waited for on the host.
  DDPX_REQUIRE(!aborted_, "nccl backend, rank {}: barrier after the communicator was aborted", rank_);
  cudaStream_t stream = nullptr;
  int* token = nullptr;
  DDPX_REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
                   cudaMalloc(&token, sizeof(int)) == cudaSuccess,
               "nccl backend, rank {}: could not allocate the barrier's stream and buffer", rank_);
  ncclResult_t result = ncclAllReduce(token, token, 1, ncclInt32, ncclSum, as_comm(comm_), stream);
  cudaError_t synced = cudaStreamSynchronize(stream);
  cudaFree(token);
  cudaStreamDestroy(stream);
  check(result, "barrier (ncclAllReduce)");
  DDPX_REQUIRE(synced == cudaSuccess, "nccl backend, rank {}: barrier failed: {}", rank_,
               cudaGetErrorString(synced));
}

void NcclCommunicator::abort(std::string_view) {
  if (aborted_.exchange(true)) return;
  cudaSetDevice(device_);  // the watchdog's thread starts on device 0; keep it off other ranks' GPUs
  ncclCommAbort(as_comm(comm_));
}

std::string NcclCommunicator::async_error() const {
  if (aborted_) return "aborted";
  ncclResult_t async_result = ncclSuccess;
  if (ncclCommGetAsyncError(as_comm(comm_), &async_result) != ncclSuccess || async_result == ncclSuccess) return "";
  return ncclGetErrorString(async_result);
}

}  // namespace ddpx
