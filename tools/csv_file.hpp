// The --csv destination of a command: a file (written from the start, closed when this goes out of scope),
// standard output for "-", or none for an empty path.
#pragma once
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem::tools {

class CsvFile {
 public:
  CsvFile(const std::string& path, const char* command) {
    if (path == "-") {
      file_ = stdout;
    } else if (!path.empty()) {
      file_ = std::fopen(path.c_str(), "w");
      if (!file_) throw Error(fmt::format("{}: cannot write {}", command, path));
      owned_ = true;
    }
  }
  ~CsvFile() {
    if (owned_) std::fclose(file_);
  }
  CsvFile(const CsvFile&) = delete;
  CsvFile& operator=(const CsvFile&) = delete;

  std::FILE* get() const { return file_; }  // nullptr: no CSV
  bool to_stdout() const { return file_ == stdout; }

 private:
  std::FILE* file_ = nullptr;
  bool owned_ = false;
};

}  // namespace matmem::tools
