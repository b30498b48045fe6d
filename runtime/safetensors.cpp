#include "matmem/runtime/safetensors.hpp"

#include <bit>
#include <cstring>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/runtime/error.hpp"
#include "matmem/runtime/files.hpp"

namespace matmem {

using nlohmann::json;

namespace {
static_assert(std::endian::native == std::endian::little, "checkpoints are written on little-endian machines");

json logical_shape(const Shape& s) {
  if (s.batch == 1 && s.slots == 1) return json::array({s.rows, s.cols});
  if (s.slots == 1) return json::array({s.batch, s.rows, s.cols});
  return json::array({s.batch, s.slots, s.rows, s.cols});
}

// Copies t's elements in logical order (b, n, i, j) into out.
void to_logical(const Tensor& t, std::byte* out) {
  const Shape& s = t.shape();
  const std::size_t es = size_of(t.dtype());
  const auto* in = static_cast<const std::byte*>(t.raw());
  std::size_t k = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t n = 0; n < s.slots; ++n)
      for (std::int64_t i = 0; i < s.rows; ++i)
        for (std::int64_t j = 0; j < s.cols; ++j, ++k) std::memcpy(out + k * es, in + s.offset(b, n, i, j) * es, es);
}

void from_logical(const std::byte* in, Tensor& t) {
  const Shape& s = t.shape();
  const std::size_t es = size_of(t.dtype());
  auto* out = static_cast<std::byte*>(t.raw());
  std::size_t k = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t n = 0; n < s.slots; ++n)
      for (std::int64_t i = 0; i < s.rows; ++i)
        for (std::int64_t j = 0; j < s.cols; ++j, ++k) std::memcpy(out + s.offset(b, n, i, j) * es, in + k * es, es);
}

}  // namespace

void write_safetensors(const std::string& path, const TensorFile& file) {
  json header = json::object();
  std::size_t offset = 0;
  for (const auto& [name, t] : file.tensors) {
    header[name] = {{"dtype", t.dtype() == DType::f32 ? "F32" : "F64"},
                    {"shape", logical_shape(t.shape())},
                    {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::string text = header.dump();
  while ((8 + text.size()) % 8) text.push_back(' ');  // data 8-byte aligned, as the format recommends
  const std::uint64_t n_header = text.size();
  std::vector<std::byte> data(offset);
  offset = 0;
  for (const auto& [name, t] : file.tensors) {
    to_logical(t, data.data() + offset);
    offset += t.bytes();
  }
  write_file_durably(path,
                     {{reinterpret_cast<const std::byte*>(&n_header), 8},
                      {reinterpret_cast<const std::byte*>(text.data()), text.size()},
                      {data.data(), data.size()}},
                     "checkpoint");
}

TensorFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("checkpoint {}: cannot be read", path));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& what) -> Error {
    return Error(fmt::format("checkpoint {}: {} (not a valid safetensors file)", path, what));
  };
  if (bytes.size() < 8) throw fail(fmt::format("only {} bytes", bytes.size()));
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8) throw fail(fmt::format("header length {} runs past the end of the {} bytes", n, bytes.size()));
  json header;
  try {
    header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + std::ptrdiff_t(n));
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw fail(fmt::format("header is not JSON ({})", e.what()));
  }
  if (!header.is_object()) throw fail("header is not a JSON object");
  const std::size_t data_begin = 8 + n, data_size = bytes.size() - data_begin;
  TensorFile out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& e = it.value();
    if (name == "__metadata__") {
      if (!e.is_object()) throw fail("__metadata__ is not an object");
      for (auto m = e.begin(); m != e.end(); ++m) {
        if (!m.value().is_string()) throw fail(fmt::format("metadata {} is not a string", m.key()));
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      throw fail(fmt::format("entry {} lacks dtype, shape or data_offsets", name));
    const std::string dt = e["dtype"].is_string() ? e["dtype"].get<std::string>() : "";
    if (dt != "F32" && dt != "F64") throw fail(fmt::format("entry {} has dtype {} (F32 or F64 expected)", name, e["dtype"].dump()));
    const DType dtype = dt == "F32" ? DType::f32 : DType::f64;
    const json& sh = e["shape"];
    std::vector<std::int64_t> dims;
    if (!sh.is_array()) throw fail(fmt::format("entry {}: shape is not an array", name));
    for (const json& d : sh) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0) throw fail(fmt::format("entry {}: bad shape {}", name, sh.dump()));
      dims.push_back(d.get<std::int64_t>());
    }
    Shape s;
    switch (dims.size()) {
      case 1: s = parameter(1, dims[0]); break;
      case 2: s = parameter(dims[0], dims[1]); break;
      case 3: s = matrices(dims[0], dims[1], dims[2]); break;
      case 4: s = memory(dims[0], dims[1], dims[2], dims[3]); break;
      default: throw fail(fmt::format("entry {}: shape {} has {} dimensions (1 to 4 expected)", name, sh.dump(), dims.size()));
    }
    const json& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw fail(fmt::format("entry {}: data_offsets must be [begin, end]", name));
    const std::size_t b = off[0].get<std::size_t>(), end = off[1].get<std::size_t>();
    // The shape's size in bytes, checked against the data before anything is allocated: a shape of huge
    // dimensions (whose product may not even fit 64 bits) is refused, not allocated.
    std::uint64_t bytes_needed = size_of(dtype);
    bool too_big = false;
    for (const std::int64_t d : dims) too_big = too_big || __builtin_mul_overflow(bytes_needed, std::uint64_t(d), &bytes_needed);
    if (too_big || bytes_needed > data_size)
      throw fail(fmt::format("entry {}: shape {} needs {} bytes, more than the {} bytes of data (data_offsets [{}, {}])",
                             name, sh.dump(), too_big ? std::string("over 2^64") : std::to_string(bytes_needed),
                             data_size, b, end));
    if (end < b || end > data_size || end - b != bytes_needed)
      throw fail(fmt::format("entry {}: data_offsets [{}, {}] do not hold {} {} bytes within {} bytes of data", name, b,
                             end, bytes_needed, dt, data_size));
    Tensor t(dtype, s);
    from_logical(reinterpret_cast<const std::byte*>(bytes.data() + data_begin + b), t);
    out.tensors.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace matmem
