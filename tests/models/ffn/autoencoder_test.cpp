// The tied-weight auto-encoder (models/ffn/autoencoder.hpp): gradient-checked whole in float64 (matrix and
// vector), its decoder checked against the formula by hand (the encoder's U and V, transposed), and its
// parameters counted.
#include "models/ffn/autoencoder.hpp"

#include <cmath>

#include <catch2/catch.hpp>

#include "models/registry.hpp"
#include "runtime/error.hpp"

#include "../model_gradcheck.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
AutoencoderConfig tiny(std::int64_t rows, std::int64_t cols, std::int64_t in_rows, std::int64_t in_cols, std::int64_t k) {
  AutoencoderConfig c;
  c.rows = rows, c.cols = cols, c.encoder_layers = k, c.activation = Activation::tanh;
  c.input_rows = in_rows, c.input_cols = in_cols;
  return c;
}
// One frame of random inputs in [0, 1] and real targets at step 0.
Sequence reconstruction(Model& m, std::int64_t batch, std::uint64_t seed) {
  Rng rng(seed);
  Sequence s;
  s.kind = TargetKind::reals;
  Tensor x(DType::f64, matrices(batch, m.input_rows(), m.input_cols())), y = x;
  for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, rng.uniform()), y.set(k, rng.uniform());
  s.inputs.push_back(std::move(x));
  s.targets.push_back(std::move(y));
  s.target_steps.push_back(0);
  return s;
}
}  // namespace

TEST_CASE("the autoencoder passes gradcheck whole, matrix and vector", "[models][autoencoder][gradcheck]") {
  for (bool vector : {false, true}) {
    SECTION(vector ? "vector 1x4 of 1x6" : "matrix 2x3 of 3x4") {
      MatAutoencoder m(vector ? tiny(1, 4, 1, 6, 2) : tiny(2, 3, 3, 4, 2), DType::f64, 3);
      m.build();
      testing::perturb_parameters(m, 0.3, 5);
      const Sequence seq = reconstruction(m, 3, 9);
      auto f = [&](Tape& tape, std::span<const Var>) {
        Unroller u(m, tape);
        return u.run(seq).loss;
      };
      std::vector<GradcheckInput> none;
      const GradcheckReport r = gradcheck(f, none, &m.params());
      INFO(r.str());
      CHECK(r.passed);
    }
  }
}

TEST_CASE("the autoencoder's decoder maps through the encoder's U and V transposed", "[models][autoencoder]") {
  // K = 1: Y = sigmoid(U tanh(Uᵀ X V + B) Vᵀ + C), by hand.
  MatAutoencoder m(tiny(2, 3, 3, 4, 1), DType::f64, 3);
  m.build();
  testing::perturb_parameters(m, 0.3, 5);
  CHECK(m.params().size() == 4);  // U, V, B, C: no decoder maps of its own
  const Tensor &U = m.params().find("autoencoder/l1/h/U")->value, &V = m.params().find("autoencoder/l1/h/V")->value,
               &B = m.params().find("autoencoder/l1/B")->value, &C = m.params().find("autoencoder/l1/C")->value;
  const Sequence seq = reconstruction(m, 2, 4);
  Tape tape(DType::f64);
  Unroller u(m, tape);
  const Tensor y = u.run(seq).logits[0].value_copy();
  const Tensor& x = seq.inputs[0];
  for (std::int64_t b = 0; b < 2; ++b) {
    double h[2][3];
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        double z = B.at(0, i, j);
        for (int p = 0; p < 3; ++p)
          for (int q = 0; q < 4; ++q) z += U.at(0, p, i) * x.at(b, p, q) * V.at(0, q, j);
        h[i][j] = std::tanh(z);
      }
    for (int p = 0; p < 3; ++p)
      for (int q = 0; q < 4; ++q) {
        double z = C.at(0, p, q);
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 3; ++j) z += U.at(0, p, i) * h[i][j] * V.at(0, q, j);
        CHECK(y.at(b, p, q) == Approx(1 / (1 + std::exp(-z))).margin(1e-12));
      }
  }
}

TEST_CASE("the autoencoder from config: parameter count, and impossible values refused by key", "[models][autoencoder]") {
  MatAutoencoder m(tiny(2, 3, 3, 4, 2), DType::f64, 3);
  m.build();
  // Layer 1: 3·2 + 4·3 + 2·3 + 3·4; layer 2: 2·2 + 3·3 + 2·3 + 2·3.
  CHECK(m.params().element_count() == (6 + 12 + 6 + 12) + (4 + 9 + 6 + 6));
  Config c;
  c.set("model", "autoencoder", "test");
  c.set("task", "retrieval", "test");
  c.set("model.layers", "2x3", "test");
  auto task = make_task(c);
  CHECK_THROWS_WITH(make_model(c, *task), Contains("reconstructs its input"));
  c.set("ffn.depth", "3", "test");
  CHECK_THROWS_WITH(make_model(c, *task), Contains("ffn.depth = 3"));
}
