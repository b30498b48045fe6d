// MatAttention (models/layers/cells.hpp, 001 §2.1 eqs. 3–4) by value inside a recurrent model: two steps of
// H_t = MatAttention(P = X_t, context H_{t−1}), logits_t = U_oᵀ H_t V_o + B_o, against the header's formulas
// written out as plain loops over std::vector matrices with the model's own parameter values:
//   Q = tanh(U_Pᵀ P V_P + U_hᵀ H V_h + B_q)  [k × d],   s_j = Σ_i softmax_i(⟨q_j, p_i⟩) p_i,
//   H_t = tanh(U_Sᵀ S V_S + B_S).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "matmem/models/core/model_gradcheck.hpp"
#include "../reference_math.hpp"
#include "matmem/models/layers/cells.hpp"

using namespace matmem;

namespace {
constexpr std::int64_t kRows = 4, kCols = 3, kHeads = 3, kStateRows = 2, kStateCols = 3, kOut = 2;

class AttentionModel : public Model {
 public:
  AttentionModel() : Model("attend", DType::f64, 5), read_("attend/read", kHeads, kStateRows, kStateCols, Activation::tanh) {
    set_io(kRows, kCols, kOut, kOut);
    declare_state({"h", parameter(kStateRows, kStateCols)});
  }
  void step(Step& s) override {
    Var h = read_(s, s.input(), {{"h", s.state("h")}});
    s.next("h", h);
    s.output(s.mat("attend/out", {{"h", h}}, kOut, kOut));
  }

 private:
  MatAttention read_;
};

using testing::ref::Mat;
using testing::ref::param;

// U_termᵀ X V_term (the caller adds B).
Mat term(const Model& m, const std::string& path, const std::string& name, const Mat& x) {
  return testing::ref::bilinear(x, param(m, path + "/" + name + "/U"), param(m, path + "/" + name + "/V"));
}

double input(std::int64_t t, std::int64_t b, std::int64_t i, std::int64_t j) {
  return std::sin(0.8 * double(t) + 1.9 * double(b) + 0.6 * double(i) + 1.1 * double(j) + 0.1 * double(i * j));
}
}  // namespace

TEST_CASE("MatAttention forward: k tanh queries of P and the context, each a softmax read of P's rows, then a map",
          "[models][attention]") {
  AttentionModel m;
  m.build();
  perturb_parameters(m, 0.5, 23);
  const std::int64_t B = 2, T = 2;
  Sequence seq;
  seq.kind = TargetKind::reals;
  for (std::int64_t t = 0; t < T; ++t) {
    Tensor& x = seq.add_input(DType::f64, matrices(B, kRows, kCols));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < kRows; ++i)
        for (std::int64_t j = 0; j < kCols; ++j) x.set(x.shape().offset(b, 0, i, j), 1.5 * input(t, b, i, j));
    seq.add_target(DType::f64, matrices(B, kOut, kOut), t);
  }
  Tape tape(DType::f64);
  Unroller u(m, tape);
  const SequenceResult& r = u.run(seq);
  REQUIRE(r.logits.size() == std::size_t(T));

  double spread = 0;  // the largest gap between two weights of one query: the reads must not be plain means
  for (std::int64_t b = 0; b < B; ++b) {
    Mat h(kStateRows, kStateCols);  // the zero start
    for (std::int64_t t = 0; t < T; ++t) {
      Mat p(kRows, kCols);
      for (std::int64_t i = 0; i < kRows; ++i)
        for (std::int64_t j = 0; j < kCols; ++j) p(i, j) = 1.5 * input(t, b, i, j);
      const Mat q = testing::ref::tanh(term(m, "attend/read/query", "P", p) + term(m, "attend/read/query", "h", h) +
                                       param(m, "attend/read/query/B"));
      REQUIRE(q.rows == kHeads);
      REQUIRE(q.cols == kCols);
      Mat s(kHeads, kCols);
      for (std::int64_t j = 0; j < kHeads; ++j) {  // query j's weights over the rows i of P
        std::vector<double> w(static_cast<std::size_t>(kRows));
        double z = 0;
        for (std::int64_t i = 0; i < kRows; ++i) {
          double dot = 0;
          for (std::int64_t c = 0; c < kCols; ++c) dot += q(j, c) * p(i, c);
          z += w[std::size_t(i)] = std::exp(dot);
        }
        for (std::int64_t i = 0; i < kRows; ++i) {
          for (std::int64_t i2 = 0; i2 < kRows; ++i2)
            spread = std::max(spread, std::abs(w[std::size_t(i)] - w[std::size_t(i2)]) / z);
          for (std::int64_t c = 0; c < kCols; ++c) s(j, c) += w[std::size_t(i)] / z * p(i, c);
        }
      }
      h = testing::ref::tanh(term(m, "attend/read/read", "S", s) + param(m, "attend/read/read/B"));
      const Mat want = term(m, "attend/out", "h", h) + param(m, "attend/out/B");
      const Tensor y = r.logits[std::size_t(t)].value_copy();
      for (std::int64_t a = 0; a < kOut; ++a)
        for (std::int64_t c = 0; c < kOut; ++c) {
          INFO("sample " << b << ", step " << t << ", element (" << a << "," << c << ")");
          CHECK(y.at(b, a, c) == Approx(want(a, c)).epsilon(1e-10).margin(1e-12));
        }
    }
  }
  CHECK(spread > 0.1);
}
