// FlatLayout-shaped flat buffers <-> safetensors files, one tensor per layout slot under the model family's
// reference names (for the ViT torchvision's, so a parameter file loads in Python with torchvision's
// vit_*().load_state_dict(safetensors.torch.load_file(f)); for the MLP the torch module of tools/make_fixtures.py).
// Guarantees:
//  - Loading validates the whole file against the model before any buffer is written: every missing tensor,
//    unexpected tensor, wrong shape and unusable dtype is listed in one ddpx::Error that names the file, each
//    tensor, both shapes, the --model and what to do. Padding between slots is set to zero.
//  - save_params_safetensors writes under io/output_file's policy (a regular file is replaced atomically: no
//    half-written file is ever visible at `path`), refuses non-finite values naming the tensor, and records a
//    CRC-32 per tensor (io/tensor_integrity.hpp). Loading verifies those checksums when the file has them (files
//    saved by PyTorch have none), naming the damaged tensor; such a failure may leave the buffer partly filled.
#pragma once
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/safetensors.hpp"
#include "model/flat_layout.hpp"

namespace ddpx {

// Views of a layout-shaped fp32 buffer, one per slot, named prefix + slot.name (buffer must outlive the views).
std::vector<TensorView> layout_tensor_views(const FlatLayout& layout, std::string_view prefix, const float* buffer);

// One layout-shaped fp32 buffer (layout.buffer_size() floats) to fill from tensors named prefix + slot.name.
struct LayoutBufferTarget {
  std::string prefix;
  float* buffer = nullptr;
};

enum class LoadDTypes {
  f32_only,        // bit-exact loads (checkpoints)
  convert_floats,  // F32 as is; F64, F16, BF16 converted to fp32 (F64 rounds to nearest)
};

// Requires the file to hold exactly the targets' tensors (none missing, none extra, shapes equal, dtypes allowed),
// then zeroes each target buffer and reads the tensors into it. `remedy` ends the error message.
void read_layout_buffers(const SafetensorsReader& reader, const FlatLayout& layout,
                         std::span<const LayoutBufferTarget> targets, LoadDTypes dtypes, std::string_view remedy);

// Writes the parameters as F32 tensors under the layout's names. metadata gains "format": "pt" and "model":
// layout.spec() unless it sets them.
// `flag` names the output in errors ("--save").
void save_params_safetensors(const std::filesystem::path& path, const FlatLayout& layout, const float* params,
                             const TensorMetadata& metadata = {}, std::string_view flag = "weights file");

// What ddpx records with saved weights (--save): "ddpx.model" (layout.spec()), "ddpx.step" and, where the training
// data named its classes, "ddpx.classes" (a JSON array, label = index), which `ddpx eval` prints beside its classes.
TensorMetadata weights_metadata(const FlatLayout& layout, int64_t step, const std::vector<std::string>& class_names);
// The "ddpx.classes" of a weights file's metadata; empty when it has none (or the names are not a JSON array of
// strings: they are a label, never needed to load the weights).
std::vector<std::string> weights_class_names(const SafetensorsReader& reader);

// Loads parameters saved by save_params_safetensors or by PyTorch (safetensors.torch.save_file of the reference
// module's state_dict); F32, F64, F16 and BF16 tensors are accepted (converted to fp32). params holds
// layout.buffer_size() floats.
void load_params_safetensors(const std::filesystem::path& path, const FlatLayout& layout, float* params);

// --load W --reset-head: every tensor but the classifier head (model/classifier_head.hpp) is read as
// load_params_safetensors reads it (same checks, same errors); the head's slots keep what `params` held (the
// family's initialization) whatever the file has there (another class count, or no head at all). Returns one line per
// head tensor left, saying why ("heads.head.weight: the file's [1000, 768] is not --model's [10, 768]"). A file that
// holds fewer than half of the model's other tensors is another model family: an error naming --reset-head, the
// file and the --model, before anything is written.
std::vector<std::string> load_params_except_head(const std::filesystem::path& path, const FlatLayout& layout,
                                                 float* params);

}  // namespace ddpx
