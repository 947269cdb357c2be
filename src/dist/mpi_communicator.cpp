// MpiCommunicator: Open MPI collectives on host buffers; 16-bit reductions through MPI user operations.
#include "dist/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/error.hpp"
#include "core/half_precision.hpp"
#include "dist/host_reduction.hpp"
#include "dist/mpi_session.hpp"

namespace ddpx {
namespace {

// MPI counts are int: larger buffers go in pieces of at most this many elements.
constexpr size_t kMaxChunk = size_t{1} << 30;

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float), bool kMax>
void reduce_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = Widen(a[i]), y = Widen(b[i]);
    b[i] = Narrow(kMax ? std::max(x, y) : x + y);
  }
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm parent, int local_rank) : RankedCommunicator("mpi", BufferMemory::host) {
  DDPX_REQUIRE(MpiSession::initialized(), "the MPI backend needs MPI to be initialized first (create a "
                                          "ddpx::MpiSession, or run under mpirun)");
  require_mpi_thread_support();
  check(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  if (local_rank >= 0) {
    local_rank_ = local_rank;
  } else {
    MPI_Comm node_comm;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm),
          "MPI_Comm_split_type");
    MPI_Comm_rank(node_comm, &local_rank_);
    MPI_Comm_free(&node_comm);
  }
  MPI_Type_contiguous(2, MPI_BYTE, &f16_type_);
  MPI_Type_commit(&f16_type_);
  MPI_Type_contiguous(2, MPI_BYTE, &bf16_type_);
  MPI_Type_commit(&bf16_type_);
  MPI_Op_create(&reduce_16bit<half_to_float, float_to_half, false>, 1, &f16_sum_);
  MPI_Op_create(&reduce_16bit<half_to_float, float_to_half, true>, 1, &f16_max_);
  MPI_Op_create(&reduce_16bit<bf16_to_float, float_to_bf16, false>, 1, &bf16_sum_);
  MPI_Op_create(&reduce_16bit<bf16_to_float, float_to_bf16, true>, 1, &bf16_max_);
}

MpiCommunicator::~MpiCommunicator() {
  if (!MpiSession::initialized()) return;  // MPI_Finalize already released everything
  for (MPI_Op* op : {&f16_sum_, &f16_max_, &bf16_sum_, &bf16_max_}) MPI_Op_free(op);
  MPI_Type_free(&f16_type_);
  MPI_Type_free(&bf16_type_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiCommunicator::check(int status, std::string_view operation) const {
  DDPX_REQUIRE(!aborted_.load(), "mpi backend, rank {}: {} called after the communicator was aborted", rank_,
               operation);
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  fail("mpi backend, rank {}: {} failed: {}", rank_, operation, std::string(text, length));
}

MPI_Datatype MpiCommunicator::mpi_type(CommDType dtype) const {
  switch (dtype) {
    case CommDType::f32: return MPI_FLOAT;
    case CommDType::f64: return MPI_DOUBLE;
    case CommDType::i32: return MPI_INT32_T;
    case CommDType::i64: return MPI_INT64_T;
    case CommDType::u8: return MPI_UINT8_T;
    case CommDType::f16: return f16_type_;
    case CommDType::bf16: return bf16_type_;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op MpiCommunicator::mpi_op(CommDType dtype, ReduceOp op) const {
  bool is_max = op == ReduceOp::max;
  if (dtype == CommDType::f16) return is_max ? f16_max_ : f16_sum_;
  if (dtype == CommDType::bf16) return is_max ? bf16_max_ : bf16_sum_;
  return is_max ? MPI_MAX : MPI_SUM;
}

void MpiCommunicator::all_reduce(void* buf, size_t count, CommDType dtype, ReduceOp op, void*) {
  size_t element_bytes = comm_dtype_size(dtype);
  for (size_t done = 0; done < count; done += kMaxChunk) {
    int chunk = static_cast<int>(std::min(kMaxChunk, count - done));
    check(MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(buf) + done * element_bytes, chunk, mpi_type(dtype),
                        mpi_op(dtype, op), comm_),
          "MPI_Allreduce");
  }
  if (op == ReduceOp::avg && size_ > 1) divide_by_world(buf, count, dtype, size_);
}

void MpiCommunicator::all_reduce_out_of_place(const void* send, void* recv, size_t count, CommDType dtype,
                                              ReduceOp op, void*) {
  size_t element_bytes = comm_dtype_size(dtype);
  for (size_t done = 0; done < count; done += kMaxChunk) {
    int chunk = static_cast<int>(std::min(kMaxChunk, count - done));
    check(MPI_Allreduce(static_cast<const char*>(send) + done * element_bytes,
                        static_cast<char*>(recv) + done * element_bytes, chunk, mpi_type(dtype), mpi_op(dtype, op),
                        comm_),
          "MPI_Allreduce");
  }
  if (op == ReduceOp::avg && size_ > 1) divide_by_world(recv, count, dtype, size_);
}

void MpiCommunicator::broadcast(void* buf, size_t count, CommDType dtype, int root, void*) {
  DDPX_REQUIRE(root >= 0 && root < size_, "mpi backend: broadcast root {} is not a rank of this {}-rank group",
               root, size_);
  size_t element_bytes = comm_dtype_size(dtype);
  for (size_t done = 0; done < count; done += kMaxChunk) {
    int chunk = static_cast<int>(std::min(kMaxChunk, count - done));
    check(MPI_Bcast(static_cast<char*>(buf) + done * element_bytes, chunk, mpi_type(dtype), root, comm_),
          "MPI_Bcast");
  }
}

void MpiCommunicator::all_gather(const void* send, void* recv, size_t count_per_rank, CommDType dtype, void*) {
  DDPX_REQUIRE(count_per_rank <= kMaxChunk, "mpi backend: all_gather of {} elements per rank exceeds the "
                                            "supported {} per call", count_per_rank, kMaxChunk);
  check(MPI_Allgather(send, static_cast<int>(count_per_rank), mpi_type(dtype), recv,
                      static_cast<int>(count_per_rank), mpi_type(dtype), comm_),
        "MPI_Allgather");
}

void MpiCommunicator::barrier() { check(MPI_Barrier(comm_), "MPI_Barrier"); }

void MpiCommunicator::abort(std::string_view) {
  aborted_ = true;
  MPI_Abort(comm_, 3);
}

std::unique_ptr<Communicator> connect_mpi(const WorldInfo& world, std::chrono::milliseconds,
                                          std::chrono::milliseconds) {
  auto comm = std::make_unique<MpiCommunicator>();
  DDPX_REQUIRE(comm->size() == world.world_size,
               "MPI reports {} ranks but the {} environment says {}: start the job with mpirun -np N (without "
               "RANK/WORLD_SIZE set), or use another backend (--backend gloo on CPUs, nccl on GPUs)", comm->size(),
               launcher_name(world.launcher), world.world_size);
  return comm;
}

}  // namespace ddpx
