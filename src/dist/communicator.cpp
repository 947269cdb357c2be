// Names and sizes of the communication dtypes and ops, for error messages and byte counts.
#include "dist/communicator.hpp"

#include "core/error.hpp"

namespace ddpx {

size_t comm_dtype_size(CommDType dtype) {
  switch (dtype) {
    case CommDType::f32: return 4;
    case CommDType::f16: return 2;
    case CommDType::bf16: return 2;
    case CommDType::f64: return 8;
    case CommDType::i32: return 4;
    case CommDType::i64: return 8;
    case CommDType::u8: return 1;
  }
  return 0;
}

std::string_view comm_dtype_name(CommDType dtype) {
  switch (dtype) {
    case CommDType::f32: return "f32";
    case CommDType::f16: return "f16";
    case CommDType::bf16: return "bf16";
    case CommDType::f64: return "f64";
    case CommDType::i32: return "i32";
    case CommDType::i64: return "i64";
    case CommDType::u8: return "u8";
  }
  return "?";
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
  }
  return "?";
}

void Communicator::all_reduce_out_of_place(const void*, void*, size_t, CommDType, ReduceOp, void*) {
  fail("the {} backend has no out-of-place all-reduce; use all_reduce (in place)", backend_name());
}

}  // namespace ddpx
