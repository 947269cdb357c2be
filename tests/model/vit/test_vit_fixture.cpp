// Parity of the CPU ViT with torchvision on the committed fixture tests/fixtures/vit_tiny_torchvision.safetensors
// (tools/make_fixtures.py; the checks are tests/model/torch_fixture.hpp's): logits, loss, every parameter
// gradient, and the weights after 3 SGD steps, for VitCpu<double> (tight) and VitCpu<float> (float32 tolerances of
// the size of PyTorch's own float32 error, recorded in tests/fixtures/vit_tiny_torchvision.json).
#include <gtest/gtest.h>

#include "model/vit/vit_cpu.hpp"
#include "model/vit/vit_layout.hpp"
#include "../torch_fixture.hpp"

namespace ddpx {
namespace {

using testing::FixtureTolerances;

// double: the fixture's gradients and SGD weights are float64 results rounded to float32 (relative error
// <= 2^-24 = 6e-8), so 1e-7 of each element (measured worst: 0.59 of it, i.e. exactly that rounding); 1e-11 of the
// tensor's max absorbs float64 summation-order noise where elements nearly cancel. Logits and loss are stored in
// float64: 1e-11 (measured: 2e-13).
constexpr FixtureTolerances kDouble{1e-11, 0, 1e-11, 1e-7, 1e-11, 1e-7, 1e-11};
// float: float32 rounding through 2 blocks and 4 images. PyTorch's own float32 run is 2e-7 (logits) to 7e-7
// (conv_proj gradient) of each tensor's max away from float64 (vit_tiny_torchvision.json); ours is the same size.
// Elements much smaller than their tensor's max carry the absolute error of the sums they come from, hence a term
// relative to the max. Measured worst, in units of these tolerances: logits 0.07, gradients 0.15 (conv_proj.bias),
// SGD weights 0.23 (heads.head.weight; float32 rounding of the weights alone is 6e-8 each step).
constexpr FixtureTolerances kFloat{2e-6, 2e-6, 1e-6, 1e-5, 2e-6, 3e-7, 3e-7};

class TorchvisionFixture : public testing::TorchFixtureSuite<VitLayout> {
 protected:
  static void SetUpTestSuite() {
    load(VitLayout(parse_vit_spec("vit_tiny_test")), "vit_tiny_torchvision.safetensors",
         "tools/make_fixtures.py (needs torch + torchvision)");
  }
};

TEST_F(TorchvisionFixture, DoubleMatchesTorchvisionFloat64) {
  testing::expect_forward_backward_match<VitCpu, double>(*fixture_, *layout_, kDouble);
}

TEST_F(TorchvisionFixture, FloatMatchesTorchvisionWithinFloat32Rounding) {
  testing::expect_forward_backward_match<VitCpu, float>(*fixture_, *layout_, kFloat);
}

TEST_F(TorchvisionFixture, ThreeSgdStepsMatchTorchInDoubleAndFloat) {
  testing::expect_sgd_steps_match<VitCpu, double>(*fixture_, *layout_, kDouble, "double");
  testing::expect_sgd_steps_match<VitCpu, float>(*fixture_, *layout_, kFloat, "float");
}

}  // namespace
}  // namespace ddpx
