// The IDX reader (models/data/idx.hpp): reads what it is given, plain and gzipped, and refuses every kind of
// broken file with a message naming the file and what is wrong.
#include "matmem/models/data/idx.hpp"

#include <catch2/catch.hpp>

#include "matmem/runtime/error.hpp"
#include "small_data.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
const std::vector<std::uint8_t> kData = {0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255};

std::string refusal(const std::string& path) {
  try {
    read_idx(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}
}  // namespace

TEST_CASE("read_idx reads a plain and a gzipped file: sizes big-endian, data row-major", "[data][idx]") {
  const std::string dir = testing::temp_dir("idx-read");
  // Sizes above 255 check the big-endian reading of all four bytes.
  std::vector<std::uint8_t> big(2 * 300);
  for (std::size_t k = 0; k < big.size(); ++k) big[k] = std::uint8_t(k * 31 % 256);
  testing::write_bytes(dir + "/a", idx_bytes({2, 3, 2}, kData));
  testing::write_bytes(dir + "/b.gz", testing::gzip_bytes(idx_bytes({2, 300}, big)));
  const IdxArray a = read_idx(dir + "/a");
  CHECK(a.dims == std::vector<std::int64_t>{2, 3, 2});
  CHECK(a.data == kData);
  CHECK(a.count() == 2);
  const IdxArray b = read_idx(dir + "/b.gz");
  CHECK(b.dims == std::vector<std::int64_t>{2, 300});
  CHECK(b.data == big);
  // The header's bytes, as the format gives them.
  const std::vector<std::uint8_t> header = idx_bytes({70000}, {});
  CHECK(header == std::vector<std::uint8_t>{0, 0, 8, 1, 0, 1, 0x11, 0x70});
}

TEST_CASE("read_idx refuses a broken file, naming it and what is wrong", "[data][idx]") {
  const std::string dir = testing::temp_dir("idx-refuse");
  std::vector<std::uint8_t> good = idx_bytes({2, 3, 2}, kData);
  auto with = [&](const std::string& name, std::vector<std::uint8_t> bytes) {
    testing::write_bytes(dir + "/" + name, bytes);
    return refusal(dir + "/" + name);
  };
  SECTION("bad magic") {
    auto b = good;
    b[0] = 1;
    CHECK_THAT(with("magic", b), Contains(dir + "/magic") && Contains("bad magic"));
  }
  SECTION("a type other than unsigned bytes") {
    auto b = good;
    b[2] = 0x0d;  // float
    CHECK_THAT(with("type", b), Contains(dir + "/type") && Contains("0x0d"));
  }
  SECTION("no dimensions") {
    CHECK_THAT(with("dims", {0, 0, 8, 0}), Contains(dir + "/dims") && Contains("0 dimensions"));
  }
  SECTION("a header cut short") {
    CHECK_THAT(with("header", {0, 0, 8, 3, 0, 0, 0, 2}), Contains(dir + "/header") && Contains("truncated header"));
  }
  SECTION("a size of 0") {
    CHECK_THAT(with("zero", idx_bytes({2, 0}, {})), Contains(dir + "/zero") && Contains("size 0"));
  }
  SECTION("data shorter than the sizes say") {
    auto b = good;
    b.pop_back();
    CHECK_THAT(with("short", b), Contains(dir + "/short") && Contains("12 bytes of data, the file holds 11") &&
                                     Contains("truncated"));
  }
  SECTION("data longer than the sizes say") {
    auto b = good;
    b.push_back(7);
    CHECK_THAT(with("long", b), Contains(dir + "/long") && Contains("extra bytes"));
  }
  SECTION("wrong sizes in a gzipped file") {
    auto b = good;
    b[7] = 3;  // dimension 1 says 3 items
    CHECK_THAT(with("sizes.gz", testing::gzip_bytes(b)), Contains(dir + "/sizes.gz") && Contains("truncated"));
  }
  SECTION("a truncated gzip stream") {
    auto z = testing::gzip_bytes(good);
    z.resize(z.size() - 6);  // the end of the stream and its trailer
    CHECK_THAT(with("cut.gz", z), Contains(dir + "/cut.gz") && Contains("gzip stream is truncated"));
  }
  SECTION("corrupt gzip data") {
    auto z = testing::gzip_bytes(good);
    z[z.size() - 5] ^= 0xff;  // the trailer's length: the stream checks it
    CHECK_THAT(with("bad.gz", z), Contains(dir + "/bad.gz") && Contains("corrupt gzip"));
    auto y = testing::gzip_bytes(good);
    y[3] = 0xff;  // reserved header flags
    CHECK_THAT(with("flags.gz", y), Contains(dir + "/flags.gz") && Contains("corrupt gzip"));
  }
  SECTION("a missing file") { CHECK_THAT(refusal(dir + "/none"), Contains(dir + "/none") && Contains("cannot open")); }
}
