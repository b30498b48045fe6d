// The feed-forward matrix layers, gradient-checked inside a small model of their own.
#include "matmem/models/layers/cells.hpp"

#include <catch2/catch.hpp>

#include "matmem/models/core/model_gradcheck.hpp"

using namespace matmem;

namespace {
// Y_t = dense(highway(dense_relu(X_t, H_{t-1}))), H_t = that highway output: every layer kind in one step.
class LayerStack : public Model {
 public:
  LayerStack()
      : Model("stack", DType::f64, 5),
        in_("stack/in", 3, 4, Activation::sigmoid),
        hw_("stack/hw", 3, 4, Activation::tanh),
        out_("stack/out", 2, 2) {
    set_io(3, 2, 2, 2);
    declare_state({"h", parameter(3, 4)});
  }
  void step(Step& s) override {
    Var h = hw_(s, in_(s, {{"x", s.input()}, {"h", s.state("h")}}));
    s.next("h", h);
    s.output(out_(s, {{"h", h}}));
  }

 private:
  MatDense in_;
  MatHighway hw_;
  MatDense out_;
};
}  // namespace

TEST_CASE("matrix dense and highway layers pass gradcheck inside a recurrent step", "[models][gradcheck]") {
  LayerStack m;
  ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
  INFO(r.str());
  CHECK(r.passed);
  CHECK(m.params().contains("stack/hw/z/h/U"));
  CHECK(r.elements_checked == m.params().element_count());
}

namespace {
// H_t = MatAttention over the rows of [X_t as 4 × 3] with H_{t−1} as the queries' context, 3 heads: the read's
// output is the state and, through a dense map, the output.
class AttentionStep : public Model {
 public:
  AttentionStep() : Model("attend", DType::f64, 5), read_("attend/read", 3, 2, 3, Activation::tanh), out_("attend/out", 2, 2) {
    set_io(4, 3, 2, 2);
    declare_state({"h", parameter(2, 3)});
  }
  void step(Step& s) override {
    Var h = read_(s, s.input(), {{"h", s.state("h")}});
    s.next("h", h);
    s.output(out_(s, {{"h", h}}));
  }

 private:
  MatAttention read_;
  MatDense out_;
};
}  // namespace

TEST_CASE("the multi-attention read passes gradcheck inside a recurrent step", "[models][gradcheck][attention]") {
  AttentionStep m;
  ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
  INFO(r.str());
  CHECK(r.passed);
  CHECK(m.params().contains("attend/read/query/P/U"));
  CHECK(m.params().contains("attend/read/query/h/V"));
  CHECK(m.params().contains("attend/read/read/S/U"));
  CHECK(r.elements_checked == m.params().element_count());
  CHECK_THROWS_WITH(MatAttention("bad", 0, 2, 2), Catch::Contains("0 attention heads"));
}

TEST_CASE("cell_kind names the choices for an unknown cell", "[models][errors]") {
  CHECK(cell_kind("gru") == CellKind::gru);
  CHECK_THROWS_WITH(cell_kind("transformer"), Catch::Contains("rnn, lstm or gru"));
}
