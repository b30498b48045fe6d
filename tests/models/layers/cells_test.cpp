// The feed-forward matrix layers, gradient-checked inside a small model of their own.
#include "matmem/models/layers/cells.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

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
  CHECK(cell_kind("ff") == CellKind::ff);
  CHECK_THROWS_WITH(cell_kind("transformer"), Catch::Contains("rnn, lstm, gru or ff"));
}

namespace {
// One cell; its H is the output at every step (a target at every step), so the logits are the Hs.
class OneCell : public Model {
 public:
  OneCell(CellKind kind, double clip) : Model("one", DType::f64, 3), cell_(kind, "one/cell", 2, 3, 1.0, clip) {
    set_io(2, 2, 2, 3);
    if (cell_.recurrent()) declare_state({"h", parameter(2, 3)});
    if (cell_.has_cell_state()) declare_state({"c", parameter(2, 3)});
  }
  void step(Step& s) override {
    const MatCell::State prev{cell_.recurrent() ? s.state("h") : Var{}, cell_.has_cell_state() ? s.state("c") : Var{}};
    const NamedTerm in[] = {{"x", s.input()}};
    const MatCell::State next = cell_(s, in, prev);
    if (cell_.recurrent()) s.next("h", next.h);
    if (cell_.has_cell_state()) s.next("c", next.c);
    s.output(next.h);
  }

 private:
  MatCell cell_;
};

using Mat = std::vector<std::vector<double>>;  // [rows][cols], one sample

Mat zeros(std::size_t r, std::size_t c) { return Mat(r, std::vector<double>(c, 0.0)); }
Mat sample(const Tensor& t, std::int64_t b) {
  Mat m = zeros(std::size_t(t.shape().rows), std::size_t(t.shape().cols));
  for (std::size_t i = 0; i < m.size(); ++i)
    for (std::size_t j = 0; j < m[i].size(); ++j) m[i][j] = t.at(b, std::int64_t(i), std::int64_t(j));
  return m;
}
// mat(terms…) of the gate at `path` by hand: Σ_term U_termᵀ X V_term + B, from the model's parameters.
Mat hand_mat(Model& m, const std::string& path, const std::vector<std::pair<std::string, Mat>>& terms) {
  Mat y = sample(m.params().at(path + "/B").value, 0);
  for (const auto& [name, x] : terms) {
    const Tensor& u = m.params().at(path + "/" + name + "/U").value;  // [r_in, r_out]
    const Tensor& v = m.params().at(path + "/" + name + "/V").value;  // [c_in, c_out]
    for (std::size_t i = 0; i < y.size(); ++i)
      for (std::size_t j = 0; j < y[i].size(); ++j)
        for (std::size_t a = 0; a < x.size(); ++a)
          for (std::size_t b = 0; b < x[a].size(); ++b)
            y[i][j] += u.at(0, std::int64_t(a), std::int64_t(i)) * x[a][b] * v.at(0, std::int64_t(b), std::int64_t(j));
  }
  return y;
}
template <class F>
Mat each(const Mat& a, F f) {
  Mat y = a;
  for (auto& row : y)
    for (double& v : row) v = f(v);
  return y;
}
double sigm(double v) { return 1 / (1 + std::exp(-v)); }
double clipped(double v, double c) { return c > 0 ? std::clamp(v, -c, c) : v; }

// A sequence of `steps` random frames, [-2, 2] so that states grow past a small clip, a target at every step.
Sequence every_step(Model& m, int steps) {
  Rng rng(17);
  Sequence seq;
  for (int t = 0; t < steps; ++t) {
    Tensor x(DType::f64, matrices(2, m.input_rows(), m.input_cols()));
    for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, rng.uniform(-2, 2));
    seq.inputs.push_back(std::move(x));
    seq.targets.emplace_back(DType::f64, matrices(2, m.output_rows(), m.output_cols()));
    seq.target_steps.push_back(t);
  }
  return seq;
}

// The logits (the cell's H at every step) of a run of `m`, perturbed so that its gates are not all at ½.
std::vector<Tensor> run_cell(Model& m, const Sequence& seq) {
  m.build();
  perturb_parameters(m, 0.8, 5);
  Tape tape(DType::f64);
  Unroller u(m, tape);
  std::vector<Tensor> hs;
  for (const Var& y : u.run(seq).logits) hs.push_back(y.value_copy());
  return hs;
}
}  // namespace

TEST_CASE("a feed-forward cell is H_t = tanh(mat(x)), with no state: the same frame gives the same H at any step",
          "[models][cells]") {
  OneCell m(CellKind::ff, 0.0);
  const Sequence seq = every_step(m, 3);
  const std::vector<Tensor> hs = run_cell(m, seq);
  CHECK_FALSE(m.params().contains("one/cell/h/U"));  // no recurrent term
  for (std::size_t t = 0; t < hs.size(); ++t)
    for (std::int64_t b = 0; b < 2; ++b) {
      const Mat want = each(hand_mat(m, "one/cell", {{"x", sample(seq.inputs[t], b)}}), [](double v) { return std::tanh(v); });
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j) CHECK(hs[t].at(b, i, j) == Approx(want[i][j]).epsilon(1e-12));
    }
}

TEST_CASE("a clipped MatLSTM cell bounds H and C to ±clip in the forward pass, the next step reading the clipped "
          "values", "[models][cells][clip]") {
  for (const double c : {0.0, 0.25}) {
    INFO("clip " << c);
    OneCell m(CellKind::lstm, c);
    const Sequence seq = every_step(m, 4);
    const std::vector<Tensor> hs = run_cell(m, seq);
    bool clipped_somewhere = false;
    for (std::int64_t b = 0; b < 2; ++b) {
      Mat h = zeros(2, 3), cell = zeros(2, 3);
      for (std::size_t t = 0; t < hs.size(); ++t) {
        const std::vector<std::pair<std::string, Mat>> in = {{"x", sample(seq.inputs[t], b)}, {"h", h}};
        const Mat i = each(hand_mat(m, "one/cell/i", in), sigm), f = each(hand_mat(m, "one/cell/f", in), sigm),
                  o = each(hand_mat(m, "one/cell/o", in), sigm);
        const Mat chat = each(hand_mat(m, "one/cell/c", in), [](double v) { return std::tanh(v); });
        for (std::size_t r = 0; r < 2; ++r)
          for (std::size_t k = 0; k < 3; ++k) {
            const double cn = f[r][k] * cell[r][k] + i[r][k] * chat[r][k];
            const double hn = o[r][k] * std::tanh(cn);
            clipped_somewhere |= c > 0 && (std::abs(cn) > c || std::abs(hn) > c);
            cell[r][k] = clipped(cn, c);
            h[r][k] = clipped(hn, c);
            CHECK(hs[t].at(b, std::int64_t(r), std::int64_t(k)) == Approx(h[r][k]).epsilon(1e-12));
          }
      }
    }
    if (c > 0) CHECK(clipped_somewhere);  // the case tests the clip, not values that never reach it
  }
}

TEST_CASE("a clipped cell of every kind passes gradcheck whole away from the clip's edges", "[models][cells][clip][gradcheck]") {
  for (const CellKind kind : {CellKind::rnn, CellKind::lstm, CellKind::gru, CellKind::ff}) {
    INFO(cell_name(kind));
    OneCell m(kind, 0.5);
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
    INFO(r.str());
    CHECK(r.passed);
  }
}

TEST_CASE("a cell refuses a negative or infinite clip bound, naming its path", "[models][cells][errors]") {
  CHECK_THROWS_WITH(MatCell(CellKind::rnn, "net/l1", 2, 2, 1.0, -1.0), Catch::Contains("net/l1") && Catch::Contains("-1"));
  CHECK_THROWS_WITH(MatCell(CellKind::lstm, "net/l1", 2, 2, 1.0, INFINITY), Catch::Contains("net/l1"));
}
