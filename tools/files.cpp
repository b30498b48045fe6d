#include "tools/files.hpp"

#include <fstream>

#include <fmt/format.h>

#include "runtime/error.hpp"

namespace matmem::tools {

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    if (!f.flush()) throw Error(fmt::format("cannot write {}", tmp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error(fmt::format("cannot rename {} to {}: {}", tmp.string(), path.string(), ec.message()));
}

}  // namespace matmem::tools
