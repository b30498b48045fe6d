// Paths under sysfs, the kernel's view of the machine (caches, cgroup limits), read from the directory that
// the environment variable MATMEM_SYSFS_ROOT names, or /sys without it: a test or a user points it at a copy
// (or an empty directory: a machine that lists nothing) without privileges.
//   sysfs_path("fs/cgroup/memory.max") = "$MATMEM_SYSFS_ROOT/fs/cgroup/memory.max", or "/sys/fs/cgroup/memory.max".
#pragma once
#include <cstdlib>
#include <string>
#include <string_view>

namespace matmem {

inline std::string sysfs_path(std::string_view relative) {
  const char* root = std::getenv("MATMEM_SYSFS_ROOT");
  return std::string(root && *root ? root : "/sys") + "/" + std::string(relative);
}

// Bytes of memory this process may still take: MemAvailable from /proc/meminfo (else free pages), or less
// when a cgroup (v2) limits it (memory.max − memory.current under sysfs_path("fs/cgroup")).
double available_memory();

}  // namespace matmem
