#include "matmem/runtime/sysfs.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace matmem {

double available_memory() {
  double avail = double(::sysconf(_SC_AVPHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);)
    if (line.starts_with("MemAvailable:")) avail = std::stod(line.substr(13)) * 1024;
  std::ifstream max_file(sysfs_path("fs/cgroup/memory.max")), current_file(sysfs_path("fs/cgroup/memory.current"));
  double max = 0, current = 0;
  if (max_file >> max && current_file >> current) avail = std::min(avail, std::max(0.0, max - current));
  return avail;
}

}  // namespace matmem
