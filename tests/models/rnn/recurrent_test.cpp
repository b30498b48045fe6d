#include "matmem/models/rnn/recurrent.hpp"

#include "../model_gradcheck.hpp"

using namespace matmem;

namespace {
RecurrentConfig small(CellKind kind) {
  RecurrentConfig c;
  c.cell = kind;
  c.layers = {{3, 4}, {2, 3}};  // stacked, rectangular, of different sizes
  c.input_rows = 3;
  c.input_cols = 2;
  c.output_rows = 2;
  c.output_cols = 2;
  return c;
}
}  // namespace

TEST_CASE("MatRNN passes gradcheck unrolled 3 steps", "[models][gradcheck]") {
  RecurrentModel m(small(CellKind::rnn), DType::f64, 1);
  GradcheckReport r = testing::gradcheck_model(m);
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.elements_checked == m.params().element_count());
}

TEST_CASE("MatLSTM passes gradcheck unrolled 3 steps", "[models][gradcheck]") {
  RecurrentModel m(small(CellKind::lstm), DType::f64, 2);
  GradcheckReport r = testing::gradcheck_model(m);
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("MatGRU passes gradcheck unrolled 3 steps", "[models][gradcheck]") {
  RecurrentModel m(small(CellKind::gru), DType::f64, 3);
  GradcheckReport r = testing::gradcheck_model(m);
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("the vector RNN is the rows = 1 case of the same code", "[models][gradcheck]") {
  RecurrentConfig c;
  c.layers = {{1, 7}};
  c.input_rows = 2;  // content row + delimiter row
  c.input_cols = 3;
  c.output_rows = 1;
  c.output_cols = 3;
  RecurrentModel m(c, DType::f64, 4);
  GradcheckReport r = testing::gradcheck_model(m);
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("parameters are named by path and the LSTM forget bias starts at 1", "[models]") {
  RecurrentModel m(small(CellKind::lstm), DType::f32, 1);
  m.build();
  CHECK(m.params().contains("matlstm/l1/i/x/U"));
  CHECK(m.params().contains("matlstm/l2/c/h/V"));
  CHECK(m.params().contains("matlstm/out/h/U"));
  CHECK(m.params().at("matlstm/l1/f/B").value.get(0) == 1.0);
  CHECK(m.params().at("matlstm/l1/i/B").value.get(0) == 0.0);
}

TEST_CASE("the same seed builds the same parameters", "[models]") {
  RecurrentModel a(small(CellKind::gru), DType::f32, 7), b(small(CellKind::gru), DType::f32, 7),
      c(small(CellKind::gru), DType::f32, 8);
  a.build();
  b.build();
  c.build();
  const Tensor& x = a.params().at("matgru/l1/z/x/U").value;
  CHECK(x.get(0) == b.params().at("matgru/l1/z/x/U").value.get(0));
  CHECK(x.get(0) != c.params().at("matgru/l1/z/x/U").value.get(0));
}

TEST_CASE("a model refuses frames of the wrong size and names both", "[models][errors]") {
  RecurrentModel m(small(CellKind::rnn), DType::f32, 1);
  Tape tape;
  Unroller u(m, tape);
  Sequence s;
  s.inputs.push_back(Tensor(DType::f32, matrices(2, 4, 4)));
  CHECK_THROWS_WITH(u.run(s), Catch::Contains("[2,3,2]") && Catch::Contains("[2,4,4]"));
}
