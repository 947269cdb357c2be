// Which tensors are a model's classifier head: what `--load W --reset-head` leaves at its initialization so that a
// model trained on one set of classes (torchvision's 1000) can be fine-tuned on another. Every family names its head
// the reference framework's way: torchvision's ViT "heads.head.{weight,bias}", the MLP "head.{weight,bias}".
#pragma once
#include <string_view>

namespace ddpx {

inline bool is_classifier_head(std::string_view name) {
  return name.starts_with("heads.head.") || name.starts_with("head.");
}

}  // namespace ddpx
