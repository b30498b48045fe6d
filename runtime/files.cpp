#include "matmem/runtime/files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

void write_file_durably(const std::string& path, std::initializer_list<std::span<const std::byte>> parts,
                        std::string_view what) {
  const std::string tmp = path + ".tmp";
  auto failed = [&](const char* step, int err) {
    std::remove(tmp.c_str());
    return Error(fmt::format("{} {}: {} {} failed ({}); the previous {} is untouched", what, path, step, tmp,
                             std::strerror(err), what));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw Error(fmt::format("{} {}: cannot create {} ({}); the previous {} is untouched", what, path, tmp,
                            std::strerror(err), what));
  }
  for (std::span<const std::byte> part : parts) {
    std::size_t done = 0;
    while (done < part.size()) {
      const ssize_t w = ::write(fd, part.data() + done, part.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = w < 0 ? errno : EIO;
        ::close(fd);
        throw failed("writing", err);
      }
      done += std::size_t(w);
    }
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    throw failed("flushing", err);
  }
  if (::close(fd) != 0) throw failed("closing", errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw failed("renaming over it", errno);
  // The rename is itself durable only once the directory is on disk.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || ::fsync(dfd) != 0) {
    const int err = errno;
    if (dfd >= 0) ::close(dfd);
    throw Error(fmt::format("{} {}: written, but flushing its directory failed ({})", what, path,
                            std::strerror(err)));
  }
  ::close(dfd);
}

void write_file_durably(const std::string& path, std::string_view text, std::string_view what) {
  write_file_durably(path, {{reinterpret_cast<const std::byte*>(text.data()), text.size()}}, what);
}

}  // namespace matmem
