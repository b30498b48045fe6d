// Step::parameter: a parameter asked for by name is that parameter at every time step, whatever order a step
// asks for them in (Step caches each pass's lookups by position and checks the name's hash).
#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <vector>

#include "matmem/autodiff/tape.hpp"
#include "matmem/models/core/model.hpp"

using namespace matmem;

namespace {
// Asks for parameters of one shape, some with names that share their bytes across the parts, in one order at
// even time steps and in the reverse order at odd ones, and records which parameter each name gave.
class Asking : public Model {
 public:
  // path/term/leaf triples; "ab"+"c" and "a"+"bc" differ only in where the parts split, and the long ones
  // only in their last byte or in a byte of their first eight.
  const std::vector<std::array<std::string, 3>> names = {
      {"m", "ab", "c"}, {"m", "a", "bc"}, {"model/head1/key", "h", "U"}, {"model/head1/kez", "h", "U"},
      {"model/hexd1/key", "h", "U"}, {"m", "", "B"}, {"m", "twelve_bytes", "V"}, {"m", "twelve_bytez", "V"}};
  std::vector<std::vector<const Parameter*>> seen;  // per time step, the parameter each name gave, in names' order

  Asking() : Model("asking", DType::f64, 1) { set_io(1, 1, 1, 1); }
  void step(Step& s) override {
    const std::size_t n = names.size();
    std::vector<const Parameter*> got(n);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = s.time() % 2 == 0 ? k : n - 1 - k;
      const Var v = s.parameter(names[i][0], names[i][1], names[i][2], parameter(1, 1));
      got[i] = s.tape().node(v.id).param;
    }
    if (recording) seen.push_back(got);
    s.output(s.input());
  }
  bool recording = false;
};
}  // namespace

TEST_CASE("a step's parameters are found by name at every time step, in any order it asks for them", "[models][step]") {
  Asking m;
  m.build();
  REQUIRE(m.params().size() == m.names.size());  // every name its own parameter
  Tape tape(DType::f64);
  Step s(m, tape);
  m.recording = true;
  s.begin_sequence(1);
  for (std::int64_t t = 0; t < 4; ++t) {
    s.begin_step(t, tape.constant(matrices(1, 1, 1), 0.0), true);
    m.step(s);
    s.end_step();
  }
  REQUIRE(m.seen.size() == 4);
  for (std::size_t t = 0; t < 4; ++t)
    for (std::size_t k = 0; k < m.names.size(); ++k) {
      const auto& n = m.names[k];
      INFO("time step " << t << ", " << n[0] << " / " << n[1] << " / " << n[2]);
      REQUIRE(m.seen[t][k] != nullptr);
      CHECK(m.seen[t][k]->name == (n[1].empty() ? n[0] + "/" + n[2] : n[0] + "/" + n[1] + "/" + n[2]));
    }
}
