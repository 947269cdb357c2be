// AllreduceHook: the default: one fp32 all-reduce (avg) of the bucket in place (PyTorch's allreduce_hook).
#pragma once
#include "ddp/comm_hook.hpp"

namespace ddpx {

class AllreduceHook : public CommHook {
 public:
  std::string name() const override { return "allreduce"; }
  void run(BucketView& bucket, Communicator& comm, void* stream, int64_t step) override;
  // One rank: the average is the bucket, and run() issues no collective (allreduce_hook.cpp).
  bool reads_bucket(int world) const override { return world > 1; }
};

}  // namespace ddpx
