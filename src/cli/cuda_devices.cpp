// The CUDA runtime's view of the GPUs (see cuda_devices.hpp).
#include "cli/cuda_devices.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#ifdef DDPX_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace ddpx::cli {

int visible_gpu_count() {
#ifdef DDPX_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // a machine without a driver: clear the sticky error, report none
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

std::string devices_line() {
#ifdef DDPX_HAVE_CUDA
  const int gpus = visible_gpu_count();
  if (gpus == 0) return "devices: cpu (built with CUDA; no GPU visible)";
  return "devices: cpu, cuda (" + std::to_string(gpus) + (gpus == 1 ? " GPU)" : " GPUs)");
#else
  return "devices: cpu (built without CUDA)";
#endif
}

std::vector<std::string> visible_gpu_bus_ids() {
  std::vector<std::string> ids;
#ifdef DDPX_HAVE_CUDA
  for (int device = 0; device < visible_gpu_count(); ++device) {
    char id[64] = {};
    ids.emplace_back(cudaDeviceGetPCIBusId(id, sizeof id, device) == cudaSuccess ? id : "");
  }
#endif
  return ids;
}

std::vector<std::vector<bool>> visible_gpu_peer_access() {
  const int count = visible_gpu_count();
  std::vector<std::vector<bool>> can(count, std::vector<bool>(count, false));
  for (int i = 0; i < count; ++i) {
    can[i][i] = true;
#ifdef DDPX_HAVE_CUDA
    for (int j = 0; j < count; ++j) {
      int yes = 0;
      if (i != j && cudaDeviceCanAccessPeer(&yes, i, j) == cudaSuccess) can[i][j] = yes != 0;
    }
#endif
  }
  return can;
}

namespace {

// "00000000:19:00.0" -> {domain 0, "19:00.0"}; the domain as a number so its width does not matter.
std::pair<unsigned long, std::string> split_bus_id(std::string_view id) {
  std::string lower(id);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const size_t colon = lower.find(':');
  if (colon == std::string::npos || lower.find(':', colon + 1) == std::string::npos) return {0, lower};
  return {std::strtoul(lower.substr(0, colon).c_str(), nullptr, 16), lower.substr(colon + 1)};
}

}  // namespace

bool same_pci_device(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return false;
  return split_bus_id(a) == split_bus_id(b);
}

int topology_index_of(const TopologyTable& table, std::string_view bus_id) {
  for (size_t i = 0; i < table.gpus.size(); ++i)
    if (same_pci_device(table.gpus[i].pci_bus_id, bus_id)) return static_cast<int>(i);
  return -1;
}

}  // namespace ddpx::cli
