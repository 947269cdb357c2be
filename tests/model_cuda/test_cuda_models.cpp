// The CUDA half of the model registry covers every registered family (no family trains on the CPU only by
// accident), and a family's CUDA form is found by its family name. Runs without a GPU (nothing is allocated).
#include <gtest/gtest.h>

#include "model/model_registry.hpp"
#include "model_cuda/cuda_models.hpp"

namespace ddpx {
namespace {

TEST(CudaModels, EveryRegisteredFamilyHasACudaForm) {
  std::vector<std::string> registered;
  for (const ModelFamily& family : model_families()) registered.push_back(family.name);
  EXPECT_EQ(cuda_model_families(), registered);
}

}  // namespace
}  // namespace ddpx
