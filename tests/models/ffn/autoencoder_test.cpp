// The tied-weight auto-encoder (models/ffn/autoencoder.hpp): gradient-checked whole in float64 (matrix and
// vector), its decoder checked against the formula by hand (the encoder's U and V, transposed), a stack of
// three encoder layers checked by value against the formula and by the model gradcheck that refuses negligible
// gradients, and its parameters counted.
#include "matmem/models/ffn/autoencoder.hpp"

#include <cmath>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "matmem/models/registry.hpp"
#include "matmem/runtime/error.hpp"

#include "matmem/models/core/model_gradcheck.hpp"
#include "../reference_math.hpp"

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
      const ModelGradcheckReport r = gradcheck_model(m, reconstruction(m, 3, 9));
      INFO(r.str());
      CHECK(r.passed);
    }
  }
}

TEST_CASE("the autoencoder with batch norm passes the model gradcheck, matrix and vector",
          "[models][autoencoder][gradcheck][batch_norm]") {
  for (bool vector : {false, true}) {
    SECTION(vector ? "vector 1x4 of 1x6" : "matrix 2x3 of 3x4") {
      AutoencoderConfig ac = vector ? tiny(1, 4, 1, 6, 2) : tiny(2, 3, 3, 4, 2);
      ac.batch_norm = true;
      MatAutoencoder m(ac, DType::f64, 3);
      // Every learned parameter has a gradient (no bias or 1×1 U that batch norm cancels is left); the
      // running statistics are not learned.
      std::vector<std::string> flat;
      for (const char* path : {"l1/norm", "l2/norm", "l2/dnorm"})
        for (const char* leaf : {"running_mean", "running_var"}) flat.push_back(fmt::format("autoencoder/{}/{}", path, leaf));
      const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 3, 2), {.flat = flat});
      INFO(r.str());
      CHECK(r.passed);
      CHECK_FALSE(m.params().contains("autoencoder/l1/B"));
      CHECK_FALSE(m.params().contains("autoencoder/l2/C"));
      CHECK(m.params().contains("autoencoder/l1/C"));
      CHECK(m.params().contains("autoencoder/l2/h/U") == !vector);
      // Layer 1: U, V, C and a gain and shift; layer 2: U (matrix), V, two gains and shifts.
      CHECK(m.params().element_count() ==
            (vector ? (1 + 24 + 6 + 8) + (16 + 16) : (6 + 12 + 12 + 12) + (4 + 9 + 24)));
      CHECK(m.params().buffer_element_count() == 3 * 2 * (vector ? 4 : 6));
    }
  }
}

TEST_CASE("the autoencoder's decoder maps through the encoder's U and V transposed", "[models][autoencoder]") {
  // K = 1: Y = sigmoid(U tanh(Uᵀ X V + B) Vᵀ + C), by hand.
  MatAutoencoder m(tiny(2, 3, 3, 4, 1), DType::f64, 3);
  m.build();
  perturb_parameters(m, 0.3, 5);
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

namespace {
using testing::ref::Mat;

Mat activate_ref(Activation a, const Mat& z) {
  switch (a) {
    case Activation::linear: return z;
    case Activation::sigmoid: return testing::ref::sigmoid(z);
    case Activation::tanh: return testing::ref::tanh(z);
    case Activation::relu: return testing::ref::relu(z);
  }
  return z;
}

// The tied auto-encoder's reconstruction of sample b of `x`, by the formula of autoencoder.hpp:
//   H_0 = X,  H_l = σ(U_lᵀ H_{l−1} V_l + B_l),  l = 1..K;   G_K = H_K,  G_{l−1} = σ(U_l G_l V_lᵀ + C_l),  l = K..2;
//   Y = sigmoid(U_1 G_1 V_1ᵀ + C_1).
Mat reference_autoencoder(const MatAutoencoder& m, const Tensor& x, std::int64_t b) {
  using testing::ref::matmul;
  using testing::ref::param;
  const AutoencoderConfig& c = m.config();
  const auto path = [](std::int64_t l) { return "autoencoder/l" + std::to_string(l); };
  Mat h = testing::ref::frame(x, b);
  for (std::int64_t l = 1; l <= c.encoder_layers; ++l)
    h = activate_ref(c.activation, testing::ref::bilinear(h, param(m, path(l) + "/h/U"), param(m, path(l) + "/h/V")) +
                                       param(m, path(l) + "/B"));
  Mat g = h;
  for (std::int64_t l = c.encoder_layers; l >= 1; --l) {
    const Mat z = matmul(matmul(param(m, path(l) + "/h/U"), g), testing::ref::transpose(param(m, path(l) + "/h/V"))) +
                  param(m, path(l) + "/C");
    g = l == 1 ? testing::ref::sigmoid(z) : activate_ref(c.activation, z);
  }
  return g;
}

struct Stack {
  const char* name;
  AutoencoderConfig config;
};
AutoencoderConfig with(AutoencoderConfig c, Activation a) {
  c.activation = a;
  return c;
}
// Stacks of three encoder layers (six in all): matrix and vector, each hidden activation.
const Stack stacks[] = {{"matrix 2x3 of 3x4, tanh", tiny(2, 3, 3, 4, 3)},
                        {"matrix 3x2 of 3x4, sigmoid", with(tiny(3, 2, 3, 4, 3), Activation::sigmoid)},
                        {"matrix 2x2 of 3x4, relu", with(tiny(2, 2, 3, 4, 3), Activation::relu)},
                        {"vector 1x4 of 1x6, sigmoid", with(tiny(1, 4, 1, 6, 3), Activation::sigmoid)},
                        {"vector 1x4 of 1x6, tanh", tiny(1, 4, 1, 6, 3)}};
// The gradcheck's stacks: six sigmoid layers (σ' ≤ 1/4 each) leave the first layer's bias a gradient of 7e-8
// (matrix) and 1.4e-6 (vector) of the loss at the gradcheck's point, below its floor of 1e-5: the tanh and relu
// stacks.
const Stack gradcheck_stacks[] = {stacks[0], stacks[2], stacks[4]};
}  // namespace

TEST_CASE("the stacked autoencoder's reconstruction equals the tied-weight formula, every layer", "[models][autoencoder]") {
  for (const Stack& k : stacks) {
    SECTION(k.name) {
      MatAutoencoder m(k.config, DType::f64, 3);
      m.build();
      perturb_parameters(m, 0.3, 5);
      CHECK(m.params().size() == 4 * std::size_t(k.config.encoder_layers));  // U, V, B, C a layer
      const Sequence seq = reconstruction(m, 2, 4);
      Tape tape(DType::f64);
      Unroller u(m, tape);
      const Tensor y = u.run(seq).logits[0].value_copy();
      for (std::int64_t b = 0; b < 2; ++b) testing::ref::check_equal(y, b, reference_autoencoder(m, seq.inputs[0], b));
    }
  }
}

TEST_CASE("the stacked autoencoder passes the model gradcheck, every layer's gradient non-negligible", "[models][autoencoder][gradcheck]") {
  for (const Stack& k : gradcheck_stacks) {
    SECTION(k.name) {
      MatAutoencoder m(k.config, DType::f64, 3);
      const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 3, 2));
      INFO(r.str());
      CHECK(r.passed);
      for (std::int64_t l = 1; l <= k.config.encoder_layers; ++l)
        for (const char* leaf : {"/h/U", "/h/V", "/B", "/C"})
          CHECK(m.params().contains("autoencoder/l" + std::to_string(l) + leaf));
    }
  }
}
