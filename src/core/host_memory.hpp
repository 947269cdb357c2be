// The machine's physical memory, for refusing allocations that cannot fit before they are touched (a process
// that zero-fills more than the machine has is OOM-killed with no message). 0 when unknown.
#pragma once
#include <unistd.h>

namespace ddpx {

inline double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace ddpx
