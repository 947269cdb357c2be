// AllreduceHook: avg all-reduce of the bucket.
#include "ddp/allreduce_hook.hpp"

namespace ddpx {

void AllreduceHook::run(BucketView& bucket, Communicator& comm, void* stream, int64_t) {
  comm.all_reduce(bucket.data, bucket.numel(), CommDType::f32, ReduceOp::avg, stream);
}

}  // namespace ddpx
