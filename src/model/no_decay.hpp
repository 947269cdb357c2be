// The tensors --no-decay exempts from weight decay, the way torchvision's ViT recipe does (--norm-weight-decay 0,
// --bias-weight-decay 0, --transformer-embedding-decay 0) and timm's no_weight_decay: every tensor of rank <= 1
// (biases, LayerNorm weights and biases), the position embedding and the class token. Whatever the family, the rule
// reads only the layout's names and shapes.
// Guarantees: no_decay_spans() are the exempt tensors' [offset, offset + numel) in buffer order, disjoint;
// for_each_decay_run() splits [begin, end) into maximal runs that are all exempt or all decayed, in order, covering
// it exactly (padding counts as decayed: it is zero and stays zero either way).
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "model/flat_layout.hpp"

namespace ddpx {

bool exempt_from_decay(const TensorSlot& tensor);
std::vector<BufferSpan> no_decay_spans(const FlatLayout& layout);
// The exempt tensors' names, for the start-up line ("12 tensors without weight decay: biases, norms, ...").
std::vector<std::string> no_decay_names(const FlatLayout& layout);
// The spans widened to whole `multiple`-element vectors (their ends rounded up, touching spans merged), for
// kernels that update 4 elements a thread (the CUDA optimizer). Exact: a tensor's padding is zero and stays zero
// with or without decay, and the next tensor starts at a multiple of `multiple` (FlatLayout's alignment).
std::vector<BufferSpan> widened_to_vectors(const std::vector<BufferSpan>& spans, size_t multiple);
void for_each_decay_run(size_t begin, size_t end, const std::vector<BufferSpan>& no_decay,
                        const std::function<void(size_t begin, size_t end, bool decay)>& fn);

}  // namespace ddpx
