// Every registered op through gradcheck in float64, at sizes below a SIMD width (scalar code only) and
// past several widths without being a multiple of one (vector bodies and their tails).
#include <catch2/catch.hpp>

#include "ops/registry.hpp"

using namespace matmem;

namespace {
void check_op(const OpEntry& entry, SampleSize size) {
  GradcheckReport report = gradcheck_op(entry, size);
  INFO(entry.name << ": " << report.str());
  CHECK(report.passed);
  CHECK(report.elements_checked > 0);
}
}  // namespace

TEST_CASE("the registry holds every op of the spec", "[ops]") {
  for (const char* name : {"bilinear", "mat", "add", "sub", "hadamard", "scale", "sigmoid", "tanh", "relu", "softplus",
                           "exp", "softmax", "sum", "cosine_similarity", "circular_shift", "sharpen", "memory_read",
                           "memory_write", "bce_with_logits", "mse", "softmax_cross_entropy"}) {
    INFO(name);
    CHECK(find_op(name) != nullptr);
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
