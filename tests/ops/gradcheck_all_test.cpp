// Every registered op through gradcheck in float64, at sizes below a SIMD width (scalar code only), past
// several widths without being a multiple of one (vector bodies and their tails), and at a batch that fills
// the widest vector of lanes over the batch and leaves a tail; and once more with every input feeding two
// consumers. The registry is checked against the ops the sources define.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "matmem/ops/registry.hpp"
#include "matmem/tests/ops/op_testing.hpp"

using namespace matmem;
using matmem::testing::run_in;

namespace {
void check_op(const OpEntry& entry, SampleSize size, Uses uses = Uses::once) {
  GradcheckReport report = gradcheck_op(entry, size, 1234, uses);
  INFO(entry.name << ": " << report.str());
  CHECK(report.passed);
  CHECK(report.elements_checked > 0);
}
}  // namespace

TEST_CASE("the registry holds every op of the spec", "[ops]") {
  for (const char* name : {"bilinear", "mat", "add", "sub", "hadamard", "scale", "sigmoid", "tanh", "relu", "softplus", "row",
                           "exp", "softmax", "sum", "cosine_similarity", "circular_shift", "sharpen", "memory_read",
                           "memory_write", "bce_with_logits", "mse", "softmax_cross_entropy", "ntm_addressing", "layer_norm",
                           "frobenius", "vec_outer", "vec_matvec",
                           "neighbour_mean", "neighbour_attention", "neighbour_stack", "dnc_usage", "dnc_allocation",
                           "dnc_link", "dnc_precedence", "dnc_forward_weighting", "dnc_backward_weighting",
                           "dnc_read_weighting"}) {
    INFO(name);
    CHECK(find_op(name) != nullptr);
  }
}

namespace {
// The name of every OpDef made in ops/*.cpp and ops/*.hpp (make_op<Kernel>("name", ...)), by file.
std::map<std::string, std::vector<std::string>> ops_defined_in_sources() {
  const std::regex make_op(R"re(make_op\s*<[^>]*>\s*\(\s*"([A-Za-z0-9_]+)")re");
  std::map<std::string, std::vector<std::string>> by_file;
  for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(MATMEM_SOURCE_DIR) / "ops")) {
    const std::string ext = f.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp") continue;
    std::ifstream in(f.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    auto& names = by_file[f.path().filename().string()];
    for (std::sregex_iterator m(source.begin(), source.end(), make_op), end; m != end; ++m) names.push_back((*m)[1]);
  }
  return by_file;
}
}  // namespace

TEST_CASE("the registry has an entry for every op the sources define", "[ops]") {
  const auto by_file = ops_defined_in_sources();
  REQUIRE(by_file.count("add.cpp") == 1);  // found the sources
  std::set<std::string> defined;
  for (const auto& [file, names] : by_file) {
    // An op file that makes its OpDef some other way would escape this check: every .cpp but the registry
    // defines at least one op with make_op.
    if (file.size() > 4 && file.substr(file.size() - 4) == ".cpp" && file != "registry.cpp") {
      INFO(file << " defines no op with make_op<...>(\"name\"): extend this test to find its ops");
      CHECK_FALSE(names.empty());
    }
    defined.insert(names.begin(), names.end());
  }
  CHECK(defined.size() >= 25);
  for (const std::string& name : defined) {
    INFO("op " << name << " is defined in ops/ but has no registry entry (ops/registry.cpp)");
    CHECK(find_op(name) != nullptr);
  }
  for (const OpEntry& entry : op_registry()) {
    INFO("registry entry " << entry.name << " names no op defined in ops/");
    CHECK(defined.count(entry.name) == 1);
  }
}

TEST_CASE("every op passes gradcheck with the full Jacobian at small sizes", "[ops][gradcheck]") {
  for (const OpEntry& entry : op_registry()) {
    SECTION(entry.name) { check_op(entry, SampleSize::small); }
  }
}

TEST_CASE("every op passes gradcheck at sizes that vectorise and have tails", "[ops][gradcheck]") {
  for (const OpEntry& entry : op_registry()) {
    SECTION(entry.name) { check_op(entry, SampleSize::large); }
  }
}

TEST_CASE("every op passes gradcheck at a batch that fills the widest SIMD vector and leaves a tail", "[ops][gradcheck]") {
  REQUIRE(sample_dims(SampleSize::lanes).batch == 19);  // 16 float lanes + 3, 2 x 8 double lanes + 3
  for (const OpEntry& entry : op_registry()) {
    SECTION(entry.name) { check_op(entry, SampleSize::lanes); }
  }
}

TEST_CASE("every op adds into a gradient another consumer of its input already wrote", "[ops][gradcheck]") {
  for (const OpEntry& entry : op_registry())
    for (const OpCheck& k : op_checks())
      if (k.uses == Uses::twice)
        SECTION(entry.name + " " + name_of(k.size)) { check_op(entry, k.size, Uses::twice); }
}

TEST_CASE("float32 kernels agree with float64 on the same inputs in vector bodies and tails", "[ops][precision]") {
  for (const OpEntry& entry : op_registry()) {
    for (SampleSize size : {SampleSize::large, SampleSize::lanes}) SECTION(entry.name + (size == SampleSize::large ? " large" : " lanes")) {
      Rng rng(77);
      OpSample sample = entry.sample(rng, size);
      const std::vector<Tensor> f = run_in(DType::f32, sample, 5), d = run_in(DType::f64, sample, 5);
      REQUIRE(f.size() == d.size());
      for (std::size_t t = 0; t < f.size(); ++t) {
        double scale = 0;
        for (std::int64_t k = 0; k < d[t].numel(); ++k) scale = std::max(scale, std::abs(d[t].get(k)));
        for (std::int64_t k = 0; k < d[t].numel(); ++k) {
          INFO(entry.name << (t == 0 ? " output" : " gradient of input ") << (t == 0 ? "" : std::to_string(t - 1))
                          << " element " << k << ": float32 " << f[t].get(k) << ", float64 " << d[t].get(k));
          REQUIRE(std::abs(f[t].get(k) - d[t].get(k)) <= 1e-4 * scale + 1e-5 * std::abs(d[t].get(k)) + 1e-6);
        }
      }
    }
  }
}
