// Small IDX files written by the tests themselves: a few 28×28 "images" whose pixels encode their index, and
// their labels, plain or gzipped (zlib), in a fresh temporary directory.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <zlib.h>

#include "matmem/models/data/idx.hpp"

namespace matmem::testing {

inline void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

inline std::vector<std::uint8_t> gzip_bytes(const std::vector<std::uint8_t>& in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::vector<std::uint8_t> out(deflateBound(&z, uLong(in.size())) + 64);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = uInt(in.size());
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("matmem-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Image k: pixel (i, j) = (k + i + j) mod 256, label (k · 7) mod 10.
inline std::uint8_t pixel(std::int64_t k, std::int64_t i, std::int64_t j) { return std::uint8_t((k + i + j) % 256); }
inline std::uint8_t label(std::int64_t k) { return std::uint8_t((k * 7) % 10); }

// DIR/train-… with images 0..n_train−1 and DIR/t10k-… with images n_train..n_train+n_test−1 (gzipped).
inline void write_fashion_dir(const std::string& dir, std::int64_t n_train, std::int64_t n_test) {
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& prefix, std::int64_t first, std::int64_t n) {
    std::vector<std::uint8_t> pixels, labels;
    for (std::int64_t k = first; k < first + n; ++k) {
      labels.push_back(label(k));
      for (std::int64_t i = 0; i < 28; ++i)
        for (std::int64_t j = 0; j < 28; ++j) pixels.push_back(pixel(k, i, j));
    }
    write_bytes(dir + "/" + prefix + "-images-idx3-ubyte.gz", gzip_bytes(idx_bytes({n, 28, 28}, pixels)));
    write_bytes(dir + "/" + prefix + "-labels-idx1-ubyte.gz", gzip_bytes(idx_bytes({n}, labels)));
  };
  write("train", 0, n_train);
  write("t10k", n_train, n_test);
}

}  // namespace matmem::testing
