// The feed-forward matrix layers, gradient-checked inside a small model of their own.
#include "models/layers/cells.hpp"

#include "../model_gradcheck.hpp"

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
  GradcheckReport r = testing::gradcheck_model(m);
  INFO(r.str());
  CHECK(r.passed);
  CHECK(m.params().contains("stack/hw/z/h/U"));
  CHECK(r.elements_checked == m.params().element_count());
}

TEST_CASE("cell_kind names the choices for an unknown cell", "[models][errors]") {
  CHECK(cell_kind("gru") == CellKind::gru);
  CHECK_THROWS_WITH(cell_kind("transformer"), Catch::Contains("rnn, lstm or gru"));
}
