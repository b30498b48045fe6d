// Helpers shared by the fuzz targets: a fuzz input as a file a loader can open by path, and as lines.
//
// Every target follows one contract: a loader refuses bad input by throwing matmem::Error (the command line
// also CLI::ParseError); anything else (a crash, a sanitizer report, a hang, another exception escaping the
// target) is a finding. libFuzzer drives the targets when built with MATMEM_FUZZ=ON; replay_main.cpp
// drives them over tests/fuzz/corpus/<target>/ in the normal build (the tests fuzz:replay_<target>).
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace matmem::fuzz {

// The input as a file in memory (memfd), opened by its /proc/self/fd path; nothing touches the disk.
class MemoryFile {
 public:
  MemoryFile(const std::uint8_t* data, std::size_t size) : fd_(::memfd_create("fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error("memfd_create failed");
    std::size_t done = 0;
    while (done < size) {
      const ssize_t w = ::write(fd_, data + done, size - done);
      if (w <= 0) throw std::runtime_error("writing the fuzz input failed");
      done += std::size_t(w);
    }
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  ~MemoryFile() { ::close(fd_); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

// The input split at each '\n' (a final empty line is dropped).
inline std::vector<std::string> lines(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t k = 0; k < size; ++k) {
    if (data[k] == '\n') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(char(data[k]));
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace matmem::fuzz
