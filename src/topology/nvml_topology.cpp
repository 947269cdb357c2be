// NVML prober (see nvml_topology.hpp). The few NVML types and entry points used are declared here by hand, as
// documented in NVIDIA's nvml.h (the driver's ABI): no NVML header exists on the build machines.
#include "topology/nvml_topology.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>

#include "topology/pci_sysfs.hpp"

namespace ddpx {

namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
constexpr unsigned int NVML_NVLINK_MAX_LINKS = 18;
constexpr int NVML_FEATURE_ENABLED = 1;
constexpr int NVML_P2P_CAPS_INDEX_NVLINK = 2;
constexpr int NVML_P2P_STATUS_OK = 0;
constexpr unsigned int NVML_AFFINITY_SCOPE_NODE = 0;  // nvmlAffinityScope_t

// nvmlGpuTopologyLevel_t
constexpr int NVML_TOPOLOGY_INTERNAL = 0;
constexpr int NVML_TOPOLOGY_SINGLE = 10;
constexpr int NVML_TOPOLOGY_MULTIPLE = 20;
constexpr int NVML_TOPOLOGY_HOSTBRIDGE = 30;
constexpr int NVML_TOPOLOGY_NODE = 40;

// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3 / nvmlDeviceGetNvLinkRemotePciInfo_v2.
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

struct Nvml {
  void* handle = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*get_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*get_handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*get_pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*common_ancestor)(nvmlDevice_t, nvmlDevice_t, int*) = nullptr;
  // Optional entry points: null when this driver lacks them.
  nvmlReturn_t (*driver_version)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned int, int*) = nullptr;
  nvmlReturn_t (*nvlink_remote_pci)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*p2p_status)(nvmlDevice_t, nvmlDevice_t, int, int*) = nullptr;
  nvmlReturn_t (*cpu_affinity)(nvmlDevice_t, unsigned int, unsigned long*) = nullptr;
  nvmlReturn_t (*numa_node)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*memory_affinity)(nvmlDevice_t, unsigned int, unsigned long*, unsigned int) = nullptr;

  ~Nvml() {
    if (handle) dlclose(handle);
  }
  std::string why(const char* call, nvmlReturn_t code) const {
    return fmt::format("NVML call {} failed: {} (error {})", call, error_string ? error_string(code) : "unknown",
                       code);
  }
};

template <typename Fn>
bool bind(void* handle, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  return fn != nullptr;
}

std::string level_name(int level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
    case NVML_TOPOLOGY_SINGLE: return "PIX";
    case NVML_TOPOLOGY_MULTIPLE: return "PXB";
    case NVML_TOPOLOGY_HOSTBRIDGE: return "PHB";
    case NVML_TOPOLOGY_NODE: return "NODE";
    default: return "SYS";
  }
}

// Bit mask of CPUs (or NUMA nodes) -> "0-47,96-143".
std::string cpu_ranges(const std::vector<unsigned long>& mask) {
  const size_t bits = sizeof(unsigned long) * 8;
  std::string out;
  long start = -1;
  const long total = static_cast<long>(mask.size() * bits);
  for (long cpu = 0; cpu <= total; ++cpu) {
    const bool set = cpu < total && ((mask[cpu / bits] >> (cpu % bits)) & 1UL);
    if (set && start < 0) start = cpu;
    if (!set && start >= 0) {
      if (!out.empty()) out += ",";
      out += cpu - 1 == start ? std::to_string(start) : fmt::format("{}-{}", start, cpu - 1);
      start = -1;
    }
  }
  return out;
}

}  // namespace

TopologyProbe probe_topology(const std::string& library) {
  TopologyProbe probe;
  Nvml nvml;
  nvml.handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!nvml.handle) {
    probe.message = fmt::format("NVML not found ({}): no NVIDIA driver on this machine", library);
    return probe;
  }
  const std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", bind(nvml.handle, "nvmlInit_v2", nvml.init)},
      {"nvmlShutdown", bind(nvml.handle, "nvmlShutdown", nvml.shutdown)},
      {"nvmlErrorString", bind(nvml.handle, "nvmlErrorString", nvml.error_string)},
      {"nvmlDeviceGetCount_v2", bind(nvml.handle, "nvmlDeviceGetCount_v2", nvml.get_count)},
      {"nvmlDeviceGetHandleByIndex_v2", bind(nvml.handle, "nvmlDeviceGetHandleByIndex_v2", nvml.get_handle)},
      {"nvmlDeviceGetName", bind(nvml.handle, "nvmlDeviceGetName", nvml.get_name)},
      {"nvmlDeviceGetPciInfo_v3", bind(nvml.handle, "nvmlDeviceGetPciInfo_v3", nvml.get_pci)},
      {"nvmlDeviceGetTopologyCommonAncestor",
       bind(nvml.handle, "nvmlDeviceGetTopologyCommonAncestor", nvml.common_ancestor)}};
  for (const auto& [symbol, found] : required) {
    if (!found) {
      probe.message = fmt::format("NVML at {} lacks {}: the NVIDIA driver is too old; update it", library, symbol);
      return probe;
    }
  }
  bind(nvml.handle, "nvmlSystemGetDriverVersion", nvml.driver_version);
  bind(nvml.handle, "nvmlDeviceGetNvLinkState", nvml.nvlink_state);
  bind(nvml.handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", nvml.nvlink_remote_pci);
  bind(nvml.handle, "nvmlDeviceGetP2PStatus", nvml.p2p_status);
  bind(nvml.handle, "nvmlDeviceGetCpuAffinity", nvml.cpu_affinity);
  bind(nvml.handle, "nvmlDeviceGetNumaNodeId", nvml.numa_node);
  bind(nvml.handle, "nvmlDeviceGetMemoryAffinity", nvml.memory_affinity);

  if (nvmlReturn_t rc = nvml.init(); rc != NVML_SUCCESS) {
    probe.message = nvml.why("nvmlInit_v2", rc) + ": is the NVIDIA driver loaded (nvidia-smi works)?";
    return probe;
  }
  TopologyTable table;
  std::string failure;
  std::vector<nvmlDevice_t> devices;
  unsigned int count = 0;
  if (nvmlReturn_t rc = nvml.get_count(&count); rc != NVML_SUCCESS) failure = nvml.why("nvmlDeviceGetCount_v2", rc);
  for (unsigned int i = 0; failure.empty() && i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (nvmlReturn_t rc = nvml.get_handle(i, &device); rc != NVML_SUCCESS) {
      failure = nvml.why("nvmlDeviceGetHandleByIndex_v2", rc);
      break;
    }
    GpuTopology gpu;
    gpu.index = static_cast<int>(i);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (nvml.get_name(device, name, sizeof(name)) == NVML_SUCCESS) gpu.name = name;
    nvmlPciInfo_t pci{};
    if (nvml.get_pci(device, &pci) == NVML_SUCCESS) gpu.pci_bus_id = pci.busId;
    if (nvml.cpu_affinity) {
      std::vector<unsigned long> mask(64, 0);  // room for 4096 CPUs
      if (nvml.cpu_affinity(device, static_cast<unsigned int>(mask.size()), mask.data()) == NVML_SUCCESS)
        gpu.cpu_affinity = cpu_ranges(mask);
    }
    // NUMA Affinity as nvidia-smi prints it: the nodes NVML gives as the GPU's memory affinity, else sysfs.
    if (nvml.memory_affinity) {
      std::vector<unsigned long> nodes(16, 0);  // room for 1024 NUMA nodes
      if (nvml.memory_affinity(device, static_cast<unsigned int>(nodes.size()), nodes.data(),
                               NVML_AFFINITY_SCOPE_NODE) == NVML_SUCCESS)
        gpu.numa_affinity = cpu_ranges(nodes);
    }
    if (gpu.numa_affinity.empty() && !gpu.pci_bus_id.empty()) {
      const int node = pci_numa_node("/sys", gpu.pci_bus_id);
      if (node >= 0) gpu.numa_affinity = std::to_string(node);
    }
    // GPU NUMA ID: the GPU memory's own node; NVML answers NOT_SUPPORTED (N/A) unless it is a NUMA node.
    unsigned int node = 0;
    if (nvml.numa_node && nvml.numa_node(device, &node) == NVML_SUCCESS) gpu.gpu_numa_id = static_cast<int>(node);
    devices.push_back(device);
    table.gpus.push_back(gpu);
  }
  const size_t n = table.gpus.size();
  if (failure.empty()) {
    // NVLinks: count links per peer GPU; links whose far end is no GPU of this machine go to NVSwitches.
    std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
    std::vector<int> switch_links(n, 0);
    if (nvml.nvlink_state && nvml.nvlink_remote_pci) {
      for (size_t i = 0; i < n; ++i) {
        for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
          int active = 0;
          if (nvml.nvlink_state(devices[i], link, &active) != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
          nvmlPciInfo_t remote{};
          if (nvml.nvlink_remote_pci(devices[i], link, &remote) != NVML_SUCCESS) continue;
          const std::string remote_id = normalize_pci_bus_id(remote.busId);
          bool to_gpu = false;
          for (size_t j = 0; j < n; ++j)
            if (j != i && normalize_pci_bus_id(table.gpus[j].pci_bus_id) == remote_id) {
              ++direct[i][j];
              to_gpu = true;
            }
          if (!to_gpu) ++switch_links[i];
        }
      }
    }
    table.links.assign(n, std::vector<std::string>(n));
    for (size_t i = 0; i < n && failure.empty(); ++i) {
      for (size_t j = 0; j < n; ++j) {
        if (i == j) {
          table.links[i][j] = "X";
          continue;
        }
        const int links = std::min(direct[i][j], direct[j][i]);
        int p2p = -1;
        const bool switched = switch_links[i] > 0 && switch_links[j] > 0 && nvml.p2p_status &&
                              nvml.p2p_status(devices[i], devices[j], NVML_P2P_CAPS_INDEX_NVLINK, &p2p) ==
                                  NVML_SUCCESS &&
                              p2p == NVML_P2P_STATUS_OK;
        if (links > 0) {
          table.links[i][j] = fmt::format("NV{}", links);
        } else if (switched) {
          table.links[i][j] = fmt::format("NV{}", std::min(switch_links[i], switch_links[j]));
        } else {
          int level = 0;
          if (nvmlReturn_t rc = nvml.common_ancestor(devices[i], devices[j], &level); rc != NVML_SUCCESS) {
            failure = nvml.why("nvmlDeviceGetTopologyCommonAncestor", rc);
            break;
          }
          table.links[i][j] = level_name(level);
        }
      }
    }
  }
  if (failure.empty() && nvml.driver_version) {
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    if (nvml.driver_version(version, sizeof(version)) == NVML_SUCCESS) table.driver_version = version;
  }
  nvml.shutdown();
  if (!failure.empty()) {
    probe.message = failure;
    return probe;
  }
  try {
    table.validate();
  } catch (const std::exception& e) {
    probe.message = fmt::format("NVML gave an inconsistent topology: {}", e.what());
    return probe;
  }
  probe.table = std::move(table);
  return probe;
}

}  // namespace ddpx
