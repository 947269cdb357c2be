// AllreduceHook: the default: one fp32 all-reduce (avg) of the bucket in place (PyTorch's allreduce_hook).
#pragma once
#include "ddp/comm_hook.hpp"

namespace ddpx {

class AllreduceHook : public CommHook {
 public:
  std::string name() const override { return "allreduce"; }
  void run(BucketView& bucket, Communicator& comm, void* stream, int64_t step) override;
};

}  // namespace ddpx
