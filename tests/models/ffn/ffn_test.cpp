// The deep matrix feed-forward net (models/ffn/ffn.hpp): gradient-checked whole in float64 on tiny instances
// (matrix and vector, plain, layer-normalised, residual), its residual block and parameter count checked
// against the formula, and built from the config keys, which refuse impossible values by key.
#include "matmem/models/ffn/ffn.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "matmem/models/registry.hpp"
#include "matmem/runtime/error.hpp"

#include "matmem/models/core/model_gradcheck.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
FFNConfig tiny(std::int64_t rows, std::int64_t cols, FFNConfig::Norm norm, bool residual, Activation act) {
  FFNConfig c;
  c.rows = rows, c.cols = cols, c.depth = 3, c.norm = norm, c.residual = residual, c.activation = act;
  c.input_rows = 3, c.input_cols = 4, c.output_rows = 1, c.output_cols = 3;
  return c;
}
}  // namespace

TEST_CASE("the ffn passes gradcheck whole: matrix and vector, with and without norm and residual blocks",
          "[models][ffn][gradcheck]") {
  using N = FFNConfig::Norm;
  for (N norm : {N::none, N::layer, N::batch})
    for (bool residual : {false, true})
      for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{2, 3}, {1, 4}}) {
        // tanh: smooth everywhere, so central differences are exact to rounding (relu's kink is not).
        FFN m(tiny(rows, cols, norm, residual, Activation::tanh), DType::f64, 4);
        SECTION(fmt::format("{}x{} norm {} residual {}", rows, cols, norm == N::layer ? "layer" : norm == N::batch ? "batch" : "none", residual)) {
          // Two steps: the first is the input only, the second carries a target (random_sequence); the net
          // has no state, so the first step's parameters get their gradient through the second's alone.
          // Under batch norm the running statistics are not learned. (The layers have no B_l, and the vector
          // net's no 1×1 U_l after the first, which batch norm would cancel: every parameter has a gradient.)
          std::vector<std::string> flat;
          if (norm == N::batch)
            for (int l = 1; l <= 3; ++l)
              for (const char* leaf : {"norm/running_mean", "norm/running_var"})
                flat.push_back(fmt::format("ffn/l{}/{}", l, leaf));
          const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 3, 2), {.flat = flat});
          INFO(r.str());
          CHECK(r.passed);
        }
      }
}

TEST_CASE("a residual ffn adds each block's output to its input: H_l = H_{l-1} + F(H_{l-1})", "[models][ffn]") {
  // With every parameter of layers 2..L zero, F = σ(0) is 0 for relu and tanh: the residual net's logits are
  // then those of a one-layer net, the plain net's those of a net whose hidden layers are all zero.
  for (bool residual : {false, true}) {
    FFNConfig c = tiny(2, 3, FFNConfig::Norm::none, residual, Activation::tanh);
    FFN m(c, DType::f64, 4);
    m.build();
    perturb_parameters(m, 0.3, 5);
    for (auto& p : m.params())
      if (p->name.starts_with("ffn/l2/") || p->name.starts_with("ffn/l3/")) p->value.fill(0.0);
    FFNConfig one = c;
    one.depth = 1;
    FFN n(one, DType::f64, 4);
    n.build();
    for (auto& p : n.params()) p->value = m.params().find(p->name)->value;
    Sequence seq = random_sequence(m, 2, 2, 7);
    Tape tape(DType::f64), tape2(DType::f64);
    Unroller um(m, tape), un(n, tape2);
    const Tensor ym = um.run(seq).logits[0].value_copy();
    const Tensor yn = un.run(seq).logits[0].value_copy();
    const Tensor& bias = m.params().find("ffn/out/B")->value;
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t j = 0; j < 3; ++j) {
        if (residual) CHECK(ym.at(b, 0, j) == Approx(yn.at(b, 0, j)).margin(1e-12));
        else CHECK(ym.at(b, 0, j) == Approx(bias.at(0, 0, j)).margin(1e-12));
      }
  }
}

TEST_CASE("ffn's parameters: the formula of the header", "[models][ffn]") {
  Config c;
  c.set("model", "ffn", "test");
  c.set("task", "retrieval", "test");  // 1x37 frames, 1x10 outputs
  c.set("model.layers", "5x4", "test");
  c.set("ffn.depth", "3", "test");
  auto task = make_task(c);
  // First layer 1·5 + 37·4 + 20, then 2 × (5·5 + 4·4 + 20), out 5 + 4·10 + 10.
  CHECK(make_model(c, *task)->params().element_count() == (5 + 148 + 20) + 2 * 61 + 55);
  c.set("ffn.norm", "layer", "test");
  CHECK(make_model(c, *task)->params().element_count() == (5 + 148 + 20) + 2 * 61 + 55 + 3 * 40);
  // Batch norm: no B_l (its mean cancels them); the running statistics are buffers, not counted.
  c.set("ffn.norm", "batch", "test");
  auto bn = make_model(c, *task);
  CHECK(bn->params().element_count() == (5 + 148) + 2 * 41 + 55 + 3 * 40);
  CHECK(bn->params().buffer_element_count() == 3 * 40);
  for (int l = 1; l <= 3; ++l) CHECK_FALSE(bn->params().contains(fmt::format("ffn/l{}/B", l)));
  // The vector net: no 1×1 U_l either (the frames are 1×37 rows), only V_l, G_l, D_l.
  c.set("model.layers", "1x20", "test");
  auto vector = make_model(c, *task);
  CHECK(vector->params().element_count() == 37 * 20 + 2 * 400 + 3 * 40 + (1 + 200 + 10));
  for (int l = 1; l <= 3; ++l) CHECK_FALSE(vector->params().contains(fmt::format("ffn/l{}/h/U", l)));
}

TEST_CASE("ffn's config keys: impossible values refused by key", "[models][ffn]") {
  Config c;
  c.set("model", "ffn", "test");
  c.set("task", "retrieval", "test");
  c.set("model.layers", "5x4", "test");
  auto task = make_task(c);
  auto refused = [&](const char* set, const char* message) {
    Config d = c;
    d.assign(set, "--set");
    CHECK_THROWS_WITH(make_model(d, *task), Contains(message));
  };
  refused("ffn.depth=0", "ffn.depth = 0");
  refused("ffn.norm=group", "ffn.norm = \"group\"");
  refused("ffn.activation=gelu", "ffn.activation = \"gelu\"");
  refused("model.layers=5x4,5x4", "ffn's hidden layers share one shape");
  Config d = c;
  d.assign("model.layers=1x1", "--set");
  d.assign("ffn.norm=layer", "--set");
  CHECK_THROWS_WITH(make_model(d, *task), Contains("ffn.norm = layer"));
}
