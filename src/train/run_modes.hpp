// The modes of a training run as types: device, CUDA-graph policy, optimizer overlap, the weight gradients'
// type and where uint8 batches are normalized (the data source is data/data_spec.hpp's DataSpec, the
// Device enum itself is core/device.hpp's, precision model/precision.hpp's, the optimizer
// optim/optimizer_spec.hpp's, the hook comm_plan/hook_catalogue.hpp's, the backend dist/backend_registry.hpp's
// BackendChoice). Each is parsed once, where the flags are read, and compared as an enum after.
// Guarantees: every parse_* throws ddpx::Error naming the flag, the value and the accepted values; every
// *_name() gives back the flag's spelling, so name(parse(text)) == text for every accepted text.
#pragma once
#include <string_view>

#include "core/device.hpp"

namespace ddpx {

enum class GraphPolicy { automatic, on, off };     // --cuda-graph
enum class OverlapPolicy { automatic, on, off };   // --optimizer-overlap
enum class WeightGradPolicy { automatic, fp32 };   // --weight-grads
enum class NormalizeOn { host, device };           // --normalize: where a CUDA run normalizes uint8 batches
// --resume: not given, auto (--checkpoint-dir's newest checkpoint when it holds one) or a checkpoint folder or file.
enum class ResumeMode { none, newest, checkpoint };

Device parse_device(std::string_view text);            // --device cpu | cuda
GraphPolicy parse_graph_policy(std::string_view text);  // --cuda-graph auto | on | off
OverlapPolicy parse_overlap_policy(std::string_view text);  // --optimizer-overlap auto | on | off
WeightGradPolicy parse_weight_grad_policy(std::string_view text);  // --weight-grads auto | fp32
NormalizeOn parse_normalize_on(std::string_view text);  // --normalize host | device
// --resume's text (TrainOptions::resume): "" none, "auto" newest, anything else a checkpoint path. The one place
// that reads "auto"; callers compare the mode.
ResumeMode resume_mode(std::string_view resume);

std::string_view device_name(Device device);
std::string_view graph_policy_name(GraphPolicy policy);
std::string_view overlap_policy_name(OverlapPolicy policy);
std::string_view weight_grad_policy_name(WeightGradPolicy policy);
std::string_view normalize_on_name(NormalizeOn where);

}  // namespace ddpx
