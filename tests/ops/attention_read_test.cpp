// attention_read (ops/attention_read.hpp): each query's softmax-weighted read of the rows, against the sum
// written out, in each sample of a batch; shapes that do not fit are refused naming the op and both shapes.
// Its gradient is checked with every op's (gradcheck_all_test.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "matmem/ops/attention_read.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("attention_read: row j of sample b is Σ_i softmax_i(⟨q_j, p_i⟩) p_i", "[ops][attention]") {
  const std::int64_t B = 3, k = 2, m = 4, d = 5;
  Tape tape(DType::f64);
  Tensor q(DType::f64, matrices(B, k, d)), p(DType::f64, matrices(B, m, d));
  for (std::int64_t t = 0; t < q.numel(); ++t) q.set(t, std::sin(0.7 * double(t)));
  for (std::int64_t t = 0; t < p.numel(); ++t) p.set(t, std::cos(1.3 * double(t)));
  const Tensor y = attention_read(tape.input(q), tape.input(p)).value_copy();
  REQUIRE(y.shape() == matrices(B, k, d));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < k; ++j) {
      std::vector<double> w(m);
      double z = 0;
      for (std::int64_t i = 0; i < m; ++i) {
        double s = 0;
        for (std::int64_t c = 0; c < d; ++c) s += q.at(b, j, c) * p.at(b, i, c);
        z += w[i] = std::exp(s);
      }
      for (std::int64_t c = 0; c < d; ++c) {
        double want = 0;
        for (std::int64_t i = 0; i < m; ++i) want += w[i] / z * p.at(b, i, c);
        CHECK(y.at(b, j, c) == Approx(want).epsilon(1e-12));
      }
    }
  // Zero queries weight every row alike: the read is the rows' mean.
  Tensor zero(DType::f64, matrices(B, 1, d));
  const Tensor mean = attention_read(tape.input(zero), tape.input(p)).value_copy();
  for (std::int64_t c = 0; c < d; ++c) {
    double want = 0;
    for (std::int64_t i = 0; i < m; ++i) want += p.at(1, i, c) / double(m);
    CHECK(mean.at(1, 0, c) == Approx(want).epsilon(1e-12));
  }
}

TEST_CASE("attention_read refuses shapes that do not fit, naming the op and both shapes", "[ops][attention][errors]") {
  Tape tape;
  Tensor q(DType::f32, matrices(2, 3, 4)), cols(DType::f32, matrices(2, 5, 6)), batch(DType::f32, matrices(3, 5, 4));
  Tensor mem(DType::f32, memory(2, 3, 5, 4));
  CHECK_THROWS_WITH(attention_read(tape.input(q), tape.input(cols)),
                    Contains("attention_read") && Contains("[2,3,4]") && Contains("[2,5,6]"));
  CHECK_THROWS_WITH(attention_read(tape.input(q), tape.input(batch)), Contains("[3,5,4]"));
  CHECK_THROWS_WITH(attention_read(tape.input(q), tape.input(mem)), Contains("memories"));
}
