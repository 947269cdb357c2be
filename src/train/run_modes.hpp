// The modes of a training run as types: device, CUDA-graph policy, optimizer overlap and the weight gradients'
// type (the data source is data/data_spec.hpp's DataSpec, the
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

Device parse_device(std::string_view text);            // --device cpu | cuda
GraphPolicy parse_graph_policy(std::string_view text);  // --cuda-graph auto | on | off
OverlapPolicy parse_overlap_policy(std::string_view text);  // --optimizer-overlap auto | on | off
WeightGradPolicy parse_weight_grad_policy(std::string_view text);  // --weight-grads auto | fp32

std::string_view device_name(Device device);
std::string_view graph_policy_name(GraphPolicy policy);
std::string_view overlap_policy_name(OverlapPolicy policy);
std::string_view weight_grad_policy_name(WeightGradPolicy policy);

}  // namespace ddpx
