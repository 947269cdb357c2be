// How float hyperparameters become the double scalars of an update.
// Guarantee: a float flag value is read as the shortest decimal that rounds to it (0.999f as 0.999, not
// 0.99900001287), which is the Python float a PyTorch user would have typed. Scalars derived from it in double
// (1 - beta2, bias corrections, lr * weight_decay) then equal torch's, instead of differing by up to 1e-5
// relative (1 - 0.999f is 0.00099998713).
#pragma once

namespace ddpx {

double typed_decimal(float value);

}  // namespace ddpx
