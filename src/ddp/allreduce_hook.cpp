// AllreduceHook: avg all-reduce of the bucket.
// With one rank the average is the bucket itself, so no collective is issued: DDP on one GPU then costs only the
// reducer's bookkeeping (events), not a device pass over every gradient per step; and since nothing reads the
// buckets then (its catalogue row's reads_bucket_alone, comm_plan/hook_catalogue.cpp; tests/ddp/test_hooks.cpp holds
// the two together), the gradients may be bf16 where the plain run's are. Several ranks: one NCCL/MPI
// all-reduce with ReduceOp::avg in place.
#include "ddp/allreduce_hook.hpp"

namespace ddpx {

void AllreduceHook::run(BucketView& bucket, Communicator& comm, void* stream, int64_t) {
  if (comm.size() == 1) return;
  comm.all_reduce(bucket.data, bucket.numel(), CommDType::f32, ReduceOp::avg, stream);
}

}  // namespace ddpx
