// The CUDA half of the model registry (see cuda_models.hpp for the guarantees). One line per family below.
#include "model_cuda/cuda_models.hpp"

#include <string_view>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "model/mlp/mlp_model.hpp"
#include "model/vit/vit_model.hpp"
#include "model_cuda/mlp/mlp_cuda.hpp"
#include "model_cuda/vit/vit_cuda.hpp"

namespace ddpx {
namespace {

struct CudaForm {
  std::string_view family;
  std::unique_ptr<CudaModel> (*make)(const Model& model, int64_t max_batch, Precision precision,
                                     cudaStream_t stream);
};

// The family's own Model class (the registry made it, so the cast cannot fail unless a table is wrong).
template <typename FamilyModel>
const FamilyModel& as(const Model& model) {
  const auto* typed = dynamic_cast<const FamilyModel*>(&model);
  DDPX_INTERNAL_ASSERT(typed != nullptr, "model '{}' of family '{}' is not of the type its CUDA form expects",
                       model.spec(), model.family());
  return *typed;
}

const CudaForm kCudaForms[] = {
    {"vit", [](const Model& m, int64_t b, Precision p, cudaStream_t s) -> std::unique_ptr<CudaModel> {
       return std::make_unique<VitCuda>(as<VitModel>(m).vit_layout(), b, p, s);
     }},
    {"mlp", [](const Model& m, int64_t b, Precision p, cudaStream_t s) -> std::unique_ptr<CudaModel> {
       return std::make_unique<MlpCuda>(as<MlpModel>(m).mlp_layout(), b, p, s);
     }},
};

}  // namespace

std::unique_ptr<CudaModel> make_cuda_model(const Model& model, int64_t max_batch, Precision precision,
                                           cudaStream_t compute_stream) {
  for (const CudaForm& form : kCudaForms)
    if (form.family == model.family()) return form.make(model, max_batch, precision, compute_stream);
  fail("--model {}: the '{}' family has no CUDA implementation in this ddpx; use --device cpu", model.spec(),
       model.family());
}

std::vector<std::string> cuda_model_families() {
  std::vector<std::string> families;
  for (const CudaForm& form : kCudaForms) families.emplace_back(form.family);
  return families;
}

}  // namespace ddpx
