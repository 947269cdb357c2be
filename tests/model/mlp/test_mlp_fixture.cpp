// Parity of the CPU MLP with PyTorch on the committed fixture tests/fixtures/mlp_tiny_torch.safetensors
// (tools/make_fixtures.py --models mlp, from a float64 run of its torch.nn module; the .json records which torch
// made it; the checks are tests/model/torch_fixture.hpp's): logits, loss, every parameter gradient, and the
// weights after 3 SGD steps, for MlpCpu<double> (tight) and MlpCpu<float> (float32 tolerances of the size of
// PyTorch's own float32 error, recorded in tests/fixtures/mlp_tiny_torch.json).
#include <gtest/gtest.h>

#include "model/mlp/mlp_cpu.hpp"
#include "../torch_fixture.hpp"

namespace ddpx {
namespace {

using testing::FixtureTolerances;

// double: the fixture's gradients and SGD weights are float64 results rounded to float32 (relative error
// <= 2^-24 = 6e-8), so 1e-7 of each element (measured worst: 0.59 of it, i.e. exactly that rounding); 1e-11 of the
// tensor's max absorbs float64 summation-order noise. Logits and loss are stored in float64: 1e-11 (measured: far
// below).
constexpr FixtureTolerances kDouble{1e-11, 0, 1e-11, 1e-7, 1e-11, 1e-7, 1e-11};
// float: the ViT fixture's float32 tolerances (tests/model/vit/test_vit_fixture.cpp), which hold here with room:
// PyTorch's own float32 run is at most 5e-7 of each tensor's max away from float64 (mlp_tiny_torch.json). Measured
// worst, in units of these tolerances (torch 1.13 fixture): logits 0.05, gradients 0.06 (hidden.0.weight), SGD
// weights 0.26 (hidden.0.weight).
constexpr FixtureTolerances kFloat{2e-6, 2e-6, 1e-6, 1e-5, 2e-6, 3e-7, 3e-7};

class MlpTorchFixture : public testing::TorchFixtureSuite<MlpLayout> {
 protected:
  static void SetUpTestSuite() {
    load(MlpLayout(parse_mlp_spec("mlp_tiny_test")), "mlp_tiny_torch.safetensors",
         "tools/make_fixtures.py --models mlp (needs torch)");
  }
};

TEST_F(MlpTorchFixture, DoubleMatchesTorchFloat64) {
  testing::expect_forward_backward_match<MlpCpu, double>(*fixture_, *layout_, kDouble);
}

TEST_F(MlpTorchFixture, FloatMatchesTorchWithinFloat32Rounding) {
  testing::expect_forward_backward_match<MlpCpu, float>(*fixture_, *layout_, kFloat);
}

TEST_F(MlpTorchFixture, ThreeSgdStepsMatchTorchInDoubleAndFloat) {
  testing::expect_sgd_steps_match<MlpCpu, double>(*fixture_, *layout_, kDouble, "double");
  testing::expect_sgd_steps_match<MlpCpu, float>(*fixture_, *layout_, kFloat, "float");
}

}  // namespace
}  // namespace ddpx
