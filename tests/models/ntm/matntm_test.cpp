#include "models/ntm/matntm.hpp"

#include "../model_gradcheck.hpp"

using namespace matmem;

namespace {
NTMConfig small(CellKind controller, int reads, int writes) {
  NTMConfig c;
  c.controller = controller;
  c.layers = {{3, 4}, {3, 3}};
  c.slots = 5;
  c.slot_rows = 2;
  c.slot_cols = 3;
  c.read_heads = reads;
  c.write_heads = writes;
  c.shift = 1;
  c.input_rows = 3;
  c.input_cols = 2;
  c.output_rows = 2;
  c.output_cols = 2;
  return c;
}
}  // namespace

TEST_CASE("MatNTM with a MatRNN controller passes gradcheck unrolled 3 steps", "[models][ntm][gradcheck]") {
  MatNTM m(small(CellKind::rnn, 1, 1), DType::f64, 1);
  GradcheckReport r = testing::gradcheck_model(m);
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.elements_checked == m.params().element_count());
}

TEST_CASE("MatNTM with a MatLSTM controller and two read and two write heads passes gradcheck", "[models][ntm][gradcheck]") {
  MatNTM m(small(CellKind::lstm, 2, 2), DType::f64, 2);
  GradcheckReport r = testing::gradcheck_model(m);
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("MatNTM names its parameters by head and part", "[models][ntm]") {
  MatNTM m(small(CellKind::rnn, 1, 1), DType::f32, 1);
  m.build();
  for (const char* name : {"ntm/ctrl/l1/x/U", "ntm/ctrl/l1/r1/V", "ntm/ctrl/l1/h/U", "ntm/read1/key/h/U",
                           "ntm/read1/shift/B", "ntm/write1/erase/h/V", "ntm/write1/add/B", "ntm/out/r1/U",
                           "ntm/init/read1"}) {
    INFO(name);
    CHECK(m.params().contains(name));
  }
}

TEST_CASE("the paper's copy MatNTM has the expected parameter shapes", "[models][ntm]") {
  MatNTM m(NTMConfig{}, DType::f32, 1);
  m.build();
  CHECK(m.params().at("ntm/ctrl/l1/x/U").value.shape() == parameter(6, 15));
  CHECK(m.params().at("ntm/read1/shift/h/V").value.shape() == parameter(15, 3));
  CHECK(m.params().at("ntm/out/r1/U").value.shape() == parameter(6, 5));
}

TEST_CASE("gradient flows through the memory: a write at one step changes a later read", "[models][ntm]") {
  MatNTM m(small(CellKind::rnn, 1, 1), DType::f64, 3);
  m.build();
  Sequence seq = testing::random_sequence(m, 2, 3, 5);
  Tape tape(DType::f64);
  Unroller u(m, tape);
  m.params().zero_grad();
  tape.backward(u.run(seq).loss);
  double norm = 0;
  for (const char* name : {"ntm/write1/add/B", "ntm/write1/erase/h/U", "ntm/read1/key/h/U"}) {
    const Tensor& g = m.params().at(name).grad;
    double n = 0;
    for (std::int64_t k = 0; k < g.numel(); ++k) n += g.get(k) * g.get(k);
    INFO(name);
    CHECK(n > 1e-20);
    norm += n;
  }
  CHECK(norm > 0);
}
