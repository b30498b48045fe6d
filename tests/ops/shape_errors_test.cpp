// A shape mismatch throws a ShapeError naming the op and both shapes.
#include <catch2/catch.hpp>

#include "matmem/ops/fast_weight_matrix.hpp"
#include "matmem/ops/frobenius.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("bilinear names the op and both shapes", "[ops][errors]") {
  Tape tape;
  Tensor p(DType::f32, matrices(16, 15, 15)), u(DType::f32, parameter(14, 15)), v(DType::f32, parameter(15, 15));
  try {
    bilinear(tape.input(p), tape.input(u), tape.input(v));
    FAIL("no error");
  } catch (const ShapeError& e) {
    CHECK_THAT(e.what(), Contains("bilinear") && Contains("[16,15,15]") && Contains("[1,14,15]") && Contains("U's rows"));
  }
}

TEST_CASE("elementwise ops refuse shapes that do not broadcast", "[ops][errors]") {
  Tape tape;
  Tensor a(DType::f32, matrices(16, 15, 15)), b(DType::f32, matrices(16, 14, 15));
  CHECK_THROWS_WITH(hadamard(tape.input(a), tape.input(b)),
                    Contains("hadamard") && Contains("[16,15,15]") && Contains("[16,14,15]"));
  CHECK_THROWS_AS(add(tape.input(a), tape.input(b)), ShapeError);
  CHECK_THROWS_WITH(add(tape.input(a), tape.input(b)), Contains("add: [16,15,15] and [16,14,15]"));
  CHECK_THROWS_WITH(sub(tape.input(b), tape.input(a)), Contains("sub: [16,14,15] and [16,15,15]"));
}

TEST_CASE("memory ops name the memory and the weighting", "[ops][errors]") {
  Tape tape;
  Tensor m(DType::f32, memory(4, 120, 6, 6)), w(DType::f32, weighting(4, 100)), k(DType::f32, matrices(4, 5, 6));
  CHECK_THROWS_WITH(memory_read(tape.input(m), tape.input(w)),
                    Contains("memory_read") && Contains("[4,120,6,6]") && Contains("[4,1,100]"));
  CHECK_THROWS_WITH(cosine_similarity(tape.input(k), tape.input(m)),
                    Contains("cosine_similarity") && Contains("[4,5,6]") && Contains("[4,120,6,6]"));
  Tensor s(DType::f32, weighting(4, 4));
  Tensor w120(DType::f32, weighting(4, 120));
  CHECK_THROWS_WITH(circular_shift(tape.input(w120), tape.input(s)), Contains("circular_shift: [4,1,120] and [4,1,4]") && Contains("s must have an odd length"));
}

TEST_CASE("losses need equal shapes", "[ops][errors]") {
  Tape tape;
  Tensor x(DType::f32, matrices(2, 3, 4)), t(DType::f32, matrices(2, 4, 3));
  CHECK_THROWS_WITH(bce_with_logits(tape.input(x), tape.input(t)),
                    Contains("bce_with_logits") && Contains("[2,3,4]") && Contains("[2,4,3]"));
}

TEST_CASE("frobenius names the op and both shapes", "[ops][errors]") {
  Tape tape;
  Tensor a(DType::f32, matrices(2, 3, 4)), b(DType::f32, matrices(2, 4, 3));
  CHECK_THROWS_WITH(frobenius(tape.input(a), tape.input(b)),
                    Contains("frobenius") && Contains("[2,3,4]") && Contains("[2,4,3]"));
}

TEST_CASE("vec_outer and vec_matvec name the op and both shapes", "[ops][errors]") {
  Tape tape;
  Tensor a(DType::f32, matrices(2, 3, 4)), b(DType::f32, matrices(3, 4, 3)), m(DType::f32, matrices(2, 11, 12));
  CHECK_THROWS_WITH(vec_outer(tape.input(a), tape.input(b)),
                    Contains("vec_outer") && Contains("[2,3,4]") && Contains("[3,4,3]"));
  CHECK_THROWS_WITH(vec_matvec(tape.input(m), tape.input(a)),
                    Contains("vec_matvec") && Contains("[2,11,12]") && Contains("[2,3,4]"));
}
