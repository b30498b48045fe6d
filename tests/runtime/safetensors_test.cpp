#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "matmem/runtime/safetensors.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
std::string temp_path(const char* name) {
  auto dir = std::filesystem::temp_directory_path() / "matmem_safetensors_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}
TensorFile sample() {
  TensorFile f;
  Tensor a(DType::f32, parameter(2, 3)), b(DType::f64, matrices(2, 2, 3));
  for (std::int64_t k = 0; k < a.numel(); ++k) a.set(k, 0.5 * k);
  for (std::int64_t k = 0; k < b.numel(); ++k) b.set(k, -1.25 * k);
  f.tensors.emplace("net/U", a);
  f.tensors.emplace("batch", b);
  f.metadata["step"] = "42";
  return f;
}
std::vector<char> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::vector<char>& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(b.data(), std::streamsize(b.size()));
}
}  // namespace

TEST_CASE("safetensors round-trip keeps names, shapes, values and metadata", "[checkpoint]") {
  const std::string path = temp_path("roundtrip.safetensors");
  write_safetensors(path, sample());
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  TensorFile back = read_safetensors(path);
  REQUIRE(back.tensors.size() == 2);
  CHECK(back.metadata.at("step") == "42");
  const Tensor& b = back.tensors.at("batch");
  CHECK(b.shape() == matrices(2, 2, 3));
  CHECK(b.dtype() == DType::f64);
  CHECK(b.at(1, 1, 2) == sample().tensors.at("batch").at(1, 1, 2));
  CHECK(back.tensors.at("net/U").get(5) == 2.5f);
}

TEST_CASE("the header is standard safetensors: length, JSON, logical shapes", "[checkpoint]") {
  const std::string path = temp_path("header.safetensors");
  write_safetensors(path, sample());
  std::vector<char> b = bytes_of(path);
  std::uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  const std::string header(b.data() + 8, n);
  CHECK_THAT(header, Contains("\"net/U\":{\"data_offsets\":[") && Contains("\"dtype\":\"F32\",\"shape\":[2,3]"));
  CHECK_THAT(header, Contains("\"shape\":[2,2,3]"));
  CHECK((8 + n) % 8 == 0);
}

TEST_CASE("corrupt checkpoints are refused naming the file and the fault", "[checkpoint][errors]") {
  const std::string path = temp_path("corrupt.safetensors");
  write_safetensors(path, sample());
  const std::vector<char> good = bytes_of(path);

  SECTION("truncated data") {
    write_bytes(path, std::vector<char>(good.begin(), good.end() - 5));
    CHECK_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("data_offsets"));
  }
  SECTION("header length past the end") {
    std::vector<char> bad = good;
    const std::uint64_t n = 1 << 30;
    std::memcpy(bad.data(), &n, 8);
    write_bytes(path, bad);
    CHECK_THROWS_WITH(read_safetensors(path), Contains(path) && Contains("runs past the end"));
  }
  SECTION("header not JSON") {
    std::vector<char> bad = good;
    bad[8] = 'x';
    write_bytes(path, bad);
    CHECK_THROWS_WITH(read_safetensors(path), Contains("not JSON"));
  }
  SECTION("too short to be a file") {
    write_bytes(path, {'a', 'b'});
    CHECK_THROWS_WITH(read_safetensors(path), Contains("only 2 bytes"));
  }
  SECTION("missing file") { CHECK_THROWS_WITH(read_safetensors(path + ".nope"), Contains("cannot be read")); }
}
