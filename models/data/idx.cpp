#include "matmem/models/data/idx.hpp"

#include <fstream>
#include <iterator>
#include <limits>

#include <fmt/format.h>
#include <zlib.h>

#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
constexpr std::uint8_t kUnsignedBytes = 0x08;
constexpr std::int64_t kMaxDims = 4;
constexpr std::int64_t kMaxBytes = std::int64_t(1) << 32;  // 4 GiB: far above any IDX file in use

// Inflates a whole gzip stream (one member), refusing a corrupt or truncated one.
std::vector<std::uint8_t> gunzip(const std::vector<std::uint8_t>& in, const std::string& name) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw Error(fmt::format("{}: zlib could not start inflating", name));
  std::vector<std::uint8_t> out;
  std::uint8_t buffer[1 << 16];
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = uInt(in.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = buffer;
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.insert(out.end(), buffer, buffer + (sizeof buffer - z.avail_out));
    if (std::int64_t(out.size()) > kMaxBytes) rc = Z_MEM_ERROR;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // no progress: the input ended before the stream did
  }
  const std::string msg = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (rc == Z_STREAM_END) return out;
  if (rc == Z_BUF_ERROR || rc == Z_OK)
    throw Error(fmt::format("{}: the gzip stream is truncated (it ends after {} compressed bytes, before its end)", name,
                            in.size()));
  if (rc == Z_MEM_ERROR) throw Error(fmt::format("{}: inflates to more than {} bytes", name, kMaxBytes));
  throw Error(fmt::format("{}: corrupt gzip data ({})", name, msg.empty() ? fmt::format("zlib error {}", rc) : msg));
}
}  // namespace

IdxArray parse_idx(const std::vector<std::uint8_t>& raw, const std::string& name) {
  const bool gzipped = raw.size() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b;
  std::vector<std::uint8_t> inflated;
  if (gzipped) inflated = gunzip(raw, name);
  const std::vector<std::uint8_t>& b = gzipped ? inflated : raw;
  if (b.size() < 4)
    throw Error(fmt::format("{}: {} bytes, shorter than an IDX header (4 bytes of magic)", name, b.size()));
  if (b[0] != 0 || b[1] != 0)
    throw Error(fmt::format("{}: bad magic {:02x} {:02x} {:02x} {:02x} (an IDX file starts 00 00 <type> <dims>)", name,
                            b[0], b[1], b[2], b[3]));
  if (b[2] != kUnsignedBytes)
    throw Error(fmt::format("{}: IDX data type 0x{:02x}; only unsigned bytes (0x08) are read", name, b[2]));
  const std::int64_t n = b[3];
  if (n < 1 || n > kMaxDims) throw Error(fmt::format("{}: {} dimensions; 1 to {} are read", name, n, kMaxDims));
  const std::size_t header = 4 + 4 * std::size_t(n);
  if (b.size() < header)
    throw Error(fmt::format("{}: truncated header: {} bytes, {} dimensions need {}", name, b.size(), n, header));
  IdxArray a;
  std::int64_t total = 1;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::uint8_t* p = b.data() + 4 + 4 * k;
    const std::int64_t d = (std::int64_t(p[0]) << 24) | (std::int64_t(p[1]) << 16) | (std::int64_t(p[2]) << 8) | p[3];
    if (d == 0) throw Error(fmt::format("{}: dimension {} has size 0", name, k + 1));
    total *= d;
    if (total > kMaxBytes) throw Error(fmt::format("{}: sizes whose product exceeds {} bytes", name, kMaxBytes));
    a.dims.push_back(d);
  }
  const std::int64_t have = std::int64_t(b.size() - header);
  if (have != total) {
    std::string dims;
    for (std::int64_t d : a.dims) dims += (dims.empty() ? "" : "×") + std::to_string(d);
    throw Error(fmt::format("{}: sizes {} say {} bytes of data, the file holds {} ({})", name, dims, total, have,
                            have < total ? "truncated" : "extra bytes at the end"));
  }
  a.data.assign(b.begin() + std::ptrdiff_t(header), b.end());
  return a;
}

IdxArray read_idx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open", path));
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(fmt::format("{}: read error", path));
  return parse_idx(bytes, path);
}

std::vector<std::uint8_t> idx_bytes(const std::vector<std::int64_t>& dims, const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> b = {0, 0, kUnsignedBytes, std::uint8_t(dims.size())};
  for (std::int64_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(std::uint8_t((std::uint64_t(d) >> s) & 0xff));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

}  // namespace matmem
