// The CUDA forms of the registered model families (model/model_registry.hpp), by family name: the CUDA half of
// the registry, one line per family in cuda_models.cpp.
// Guarantees: make_cuda_model returns the family's CudaModel for the model's exact layout (same spec, same
// buffer offsets as its CPU reference); a family without a CUDA form is a ddpx::Error naming the model and
// saying to use --device cpu.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "model/precision.hpp"
#include "model_cuda/cuda_model.hpp"

namespace ddpx {

std::unique_ptr<CudaModel> make_cuda_model(const Model& model, int64_t max_batch, Precision precision,
                                           cudaStream_t compute_stream);

// The families that have a CUDA form, in table order.
std::vector<std::string> cuda_model_families();

}  // namespace ddpx
