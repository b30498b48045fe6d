#include "matmem/models/ntm/matntm.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "matmem/models/core/model_gradcheck.hpp"
#include "../recorder.hpp"
#include "../small_memory_model.hpp"
#include "../training/small_config.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/rnn/recurrent.hpp"
#include "matmem/models/tasks/tasks.hpp"
#include "matmem/models/training/trainer.hpp"

using namespace matmem;

namespace {
NTMConfig small(CellKind controller, int reads, int writes) {
  NTMConfig c = testing::small_memory_model<NTMConfig>(controller, reads);
  c.write_heads = writes;
  c.shift = 1;
  return c;
}
}  // namespace

TEST_CASE("MatNTM with a MatRNN controller passes gradcheck unrolled 3 steps", "[models][ntm][gradcheck]") {
  MatNTM m(small(CellKind::rnn, 1, 1), DType::f64, 1);
  // Content addressing over a memory that starts uniform and whose written slots all lie along the add
  // vectors of a step or two is all but flat this early: β and the write key move the loss by ~1e-9.
  ModelGradcheckReport r =
      gradcheck_model(m, random_sequence(m, 2, 3), {.flat = {"ntm/read1/beta/", "ntm/write1/beta/", "ntm/write1/key/"}});
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.elements_checked == m.params().element_count());
}

TEST_CASE("MatNTM with a MatLSTM controller and two read and two write heads passes gradcheck", "[models][ntm][gradcheck]") {
  NTMConfig c = small(CellKind::lstm, 2, 2);
  c.forget_bias = 1;  // at the default -1 the second write key's gradient is also all but flat this early
  MatNTM m(c, DType::f64, 2);
  // as above: the first write head's content addressing and sharpening, and the second's β, are all but flat
  ModelGradcheckReport r = gradcheck_model(
      m, random_sequence(m, 2, 3), {.flat = {"ntm/write1/beta/", "ntm/write1/gamma/", "ntm/write1/key/", "ntm/write2/beta/"}});
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("MatNTM with read heads only (no memory_read_write) passes gradcheck", "[models][ntm][gradcheck]") {
  MatNTM m(small(CellKind::rnn, 2, 0), DType::f64, 4);
  // Never written, the memory stays uniform: a read returns the same whatever the weighting, so nothing of
  // the read heads' addressing reaches the loss, and the reads (1e-6 everywhere) barely reach the output.
  ModelGradcheckReport r =
      gradcheck_model(m, random_sequence(m, 2, 3), {.flat = {"ntm/read1/", "ntm/read2/", "ntm/out/r1/", "ntm/out/r2/"}});
  INFO(r.str());
  CHECK(r.passed);
}

// A memory that starts uniform makes content addressing all but flat in a short unroll, so the checks above
// exempt β, γ and keys by name; from a memory that differs between slots every path carries gradient, and
// these check every parameter with none exempt (a dropped β or key backward fails here, not above).
TEST_CASE("MatNTM from a random memory passes gradcheck with every parameter's gradient checked and non-negligible",
          "[models][ntm][gradcheck]") {
  for (CellKind controller : {CellKind::rnn, CellKind::lstm}) {
    NTMConfig c = small(controller, 2, 2);
    c.memory_init = NTMConfig::MemoryInit::random;
    MatNTM m(c, DType::f64, 5);
    ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
    INFO((controller == CellKind::rnn ? "MatRNN" : "MatLSTM") << " controller\n" << r.str());
    CHECK(r.passed);
    CHECK(r.elements_checked == m.params().element_count());
  }
}

// At one sequence a batch and from 8, a step's reads and writes are one memory_writes (models/ntm/matntm.cpp).
TEST_CASE("MatNTM with two read and two write heads at 1 and 8 sequences a batch passes gradcheck, every parameter "
          "checked",
          "[models][ntm][gradcheck]") {
  NTMConfig c = small(CellKind::rnn, 2, 2);
  c.memory_init = NTMConfig::MemoryInit::random;
  MatNTM m(c, DType::f64, 5);
  for (std::int64_t batch : {1, 8}) {
    ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, batch, 3));
    INFO("batch " << batch << "\n" << r.str());
    CHECK(r.passed);
    CHECK(r.elements_checked == m.params().element_count());
  }
}

TEST_CASE("MatNTM with a learned initial memory passes gradcheck, the memory's start included",
          "[models][ntm][gradcheck]") {
  NTMConfig c = small(CellKind::rnn, 1, 1);
  c.memory_init = NTMConfig::MemoryInit::learned;
  for (double std : {0.01, 0.3}) {  // the default start, and fumin/ntm's scale (memory_init_std)
    c.memory_init_std = std;
    MatNTM m(c, DType::f64, 6);
    ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
    INFO("memory_init_std " << std << "\n" << r.str());
    CHECK(r.passed);
    CHECK(m.params().contains("ntm/init/memory"));
    CHECK(r.elements_checked == m.params().element_count());
  }
}

// ntm.memory_init_std: the learned memory's start is σ times the default's draw (the same stream), and only the
// memory's: every other parameter starts as at σ = 0.01.
TEST_CASE("the learned memory starts at N(0, σ²) with σ = memory_init_std, the other parameters unchanged",
          "[models][ntm]") {
  auto params = [](double std) {
    NTMConfig c = small(CellKind::rnn, 1, 1);
    c.memory_init = NTMConfig::MemoryInit::learned;
    c.memory_init_std = std;
    auto m = std::make_unique<MatNTM>(c, DType::f64, 4);
    m->build();
    return m;
  };
  const auto a = params(0.01), b = params(0.3);
  for (const auto& p : a->params()) {
    const Tensor& x = p->value;
    const Tensor& y = b->params().at(p->name).value;
    INFO(p->name);
    for (std::int64_t k = 0; k < x.numel(); ++k)
      CHECK(y.get(k) == (p->name == "ntm/init/memory" ? Approx(30 * x.get(k)).epsilon(1e-12) : Approx(x.get(k)).margin(0)));
  }
  double sq = 0;
  const Tensor& mem = b->params().at("ntm/init/memory").value;
  for (std::int64_t k = 0; k < mem.numel(); ++k) sq += mem.get(k) * mem.get(k);
  CHECK(std::sqrt(sq / double(mem.numel())) == Approx(0.3).epsilon(0.35));  // 30 draws
  NTMConfig bad = small(CellKind::rnn, 1, 1);
  bad.memory_init_std = 0;
  CHECK_THROWS_WITH(MatNTM(bad, DType::f64, 1), Catch::Contains("memory_init_std 0"));
}

// The vector NTM (a 1 x n controller, slots of 1 x c): every head's projections are the vector form, V stacked
// once a pass (Step::projections, stacked_projections), its gradient summed over the time steps.
TEST_CASE("the vector MatNTM passes gradcheck unrolled 4 steps, every parameter checked", "[models][ntm][gradcheck]") {
  for (CellKind controller : {CellKind::ff, CellKind::lstm}) {
    NTMConfig c = small(controller, 2, 2);
    c.layers = {{1, 6}};
    c.slot_rows = 1;
    c.slot_cols = 4;
    c.input_rows = 1;
    c.input_cols = 3;
    c.output_rows = 1;
    c.memory_init = NTMConfig::MemoryInit::random;
    MatNTM m(c, DType::f64, 8);
    // This early one head's part moves the loss by ~3e-6 (checked, not required to be large): the second
    // write's shift with the feed-forward controller, the first write's β with the MatLSTM.
    ModelGradcheckOptions o;
    o.flat = {controller == CellKind::ff ? "ntm/write2/shift/" : "ntm/write1/beta/"};
    ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 4), o);
    INFO((controller == CellKind::ff ? "feed-forward" : "MatLSTM") << " controller\n" << r.str());
    CHECK(r.passed);
    CHECK(r.elements_checked == m.params().element_count());
  }
}

// ntm.cosine_eps: the content addressing's similarity with ε under each norm's root and on their product
// (CosineEps{ε, ε}; its values are checked in tests/ops/cosine_similarity_test.cpp). The parameters start the
// same whatever ε, so a loss equal to ε = 0's would mean the setting never reached the addressing.
TEST_CASE("MatNTM with cosine_eps > 0 passes gradcheck, every parameter checked, and its loss is not ε = 0's",
          "[models][ntm][gradcheck]") {
  NTMConfig c = small(CellKind::lstm, 2, 2);
  c.memory_init = NTMConfig::MemoryInit::learned;
  double loss[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    c.cosine_eps = k == 0 ? 0.0 : 0.01;
    MatNTM m(c, DType::f64, 9);
    ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
    INFO("cosine_eps " << c.cosine_eps << "\n" << r.str());
    CHECK(r.passed);
    CHECK(r.elements_checked == m.params().element_count());
    loss[k] = r.loss;
  }
  CHECK(std::abs(loss[1] - loss[0]) > 1e-6);
}

// ntm.add_activation: the write heads' add vector A linear (the NTM paper's) or sigm (fumin/ntm's). Each write
// M(1 − wE) + wA with w, E in [0, 1] and A in (0, 1) keeps a positive element positive and adds less than w to it,
// so from the constant memory (1e-6) every element stays above 0 and grows by less than 1 per write head a step;
// a linear A takes elements below 0. The parameters start the same either way.
TEST_CASE("MatNTM with a sigmoid add vector passes gradcheck, and its writes keep the memory positive and add "
          "less than 1 an element per write head", "[models][ntm][gradcheck]") {
  NTMConfig c = small(CellKind::rnn, 1, 2);
  double lowest[2], rise[2];
  for (int k = 0; k < 2; ++k) {
    c.add_activation = k ? NTMConfig::AddActivation::sigmoid : NTMConfig::AddActivation::linear;
    MatNTM m(c, DType::f64, 5);
    const Sequence seq = random_sequence(m, 2, 6);
    if (k) {
      ModelGradcheckReport r = gradcheck_model(
          m, random_sequence(m, 2, 3), {.flat = {"ntm/read1/beta/", "ntm/write1/",
                                                 "ntm/write2/beta/", "ntm/write2/key/"}});
      INFO(r.str());
      CHECK(r.passed);
      CHECK(r.elements_checked == m.params().element_count());
    }
    const testing::Recorder rec = testing::run_recorded(m, seq);
    const std::vector<Tensor>& mem = rec.seen.at("memory");
    lowest[k] = 1e300, rise[k] = -1e300;
    for (std::size_t t = 0; t < mem.size(); ++t)
      for (std::int64_t e = 0; e < mem[t].numel(); ++e) {
        lowest[k] = std::min(lowest[k], mem[t].get(e));
        rise[k] = std::max(rise[k], mem[t].get(e) - (t ? mem[t - 1].get(e) : 1e-6));
      }
  }
  CHECK(lowest[1] > 0);
  CHECK(rise[1] < 2);     // two write heads
  CHECK(lowest[0] < 0);  // the linear add, as the paper's, is unbounded
}

TEST_CASE("the memory's start: constant 1e-6, a fixed random draw within ±1, or learned", "[models][ntm]") {
  auto start = [](NTMConfig::MemoryInit init, std::uint64_t seed) {
    NTMConfig c = small(CellKind::rnn, 1, 1);
    c.memory_init = init;
    MatNTM m(c, DType::f64, seed);
    m.build();
    for (const StateDecl& d : m.states())
      if (d.name == "memory") return std::make_pair(d, m.params().contains("ntm/init/memory"));
    FAIL("no memory state");
    return std::make_pair(StateDecl{}, false);
  };
  const auto [constant, constant_param] = start(NTMConfig::MemoryInit::constant, 1);
  CHECK((constant.start == StateDecl::constant && constant.value == 1e-6 && !constant_param));
  const auto [learned, learned_param] = start(NTMConfig::MemoryInit::learned, 1);
  CHECK((learned.start == StateDecl::learned && learned_param));
  const auto [random, random_param] = start(NTMConfig::MemoryInit::random, 1);
  REQUIRE(random.start == StateDecl::given);
  CHECK(!random_param);
  double lo = 1, hi = -1;
  for (std::int64_t k = 0; k < random.initial.numel(); ++k) {
    lo = std::min(lo, random.initial.get(k));
    hi = std::max(hi, random.initial.get(k));
  }
  CHECK((lo >= -1.0 && hi <= 1.0 && hi - lo > 0.5));  // 30 draws of N(0, 0.5²) spread wider than 0.5
  const auto [again, again_param] = start(NTMConfig::MemoryInit::random, 1);
  const auto [other, other_param] = start(NTMConfig::MemoryInit::random, 2);
  bool same = true, differs = false;
  for (std::int64_t k = 0; k < random.initial.numel(); ++k) {
    same = same && again.initial.get(k) == random.initial.get(k);
    differs = differs || other.initial.get(k) != random.initial.get(k);
  }
  CHECK(same);     // from the model's seed
  CHECK(differs);  // and only from it
  // The other parameters start as with a constant memory.
  NTMConfig c = small(CellKind::rnn, 1, 1);
  MatNTM a(c, DType::f64, 3);
  c.memory_init = NTMConfig::MemoryInit::random;
  MatNTM b(c, DType::f64, 3);
  a.build();
  b.build();
  for (const auto& p : a.params()) {
    INFO(p->name);
    const Tensor& q = b.params().at(p->name).value;
    for (std::int64_t k = 0; k < q.numel(); ++k) CHECK(q.get(k) == p->value.get(k));
  }
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
  Sequence seq = random_sequence(m, 2, 3, 5);
  Tape tape(DType::f64);
  Unroller u(m, tape);
  m.params().zero_grad();
  tape.backward(u.run(seq).loss);
  double norm = 0;
  for (const char* name : {"ntm/write1/add/B", "ntm/write1/erase/h/U", "ntm/read1/key/h/U", "ntm/read1/shift/h/U"}) {
    const Tensor& g = m.params().at(name).grad;
    double n = 0;
    for (std::int64_t k = 0; k < g.numel(); ++k) n += g.get(k) * g.get(k);
    INFO(name);
    CHECK(n > 1e-20);
    norm += n;
  }
  CHECK(norm > 0);
}

namespace {
// The largest difference between any two slots of the final memory, after a run of `steps`.
double slot_spread(NTMConfig::Start start) {
  NTMConfig c = small(CellKind::rnn, 1, 1);
  c.initial_weighting = start;
  MatNTM m(c, DType::f64, 3);
  m.build();
  Sequence seq = random_sequence(m, 2, 6, 5);
  Tape tape(DType::f64);
  Unroller u(m, tape);
  u.run(seq);
  // The memory is the output of the last memory_write (or memory_read_write, output 0) on the tape.
  for (std::int64_t k = std::int64_t(tape.size()) - 1; k >= 0; --k) {
    const auto& node = tape.node(std::uint32_t(k));
    if (!node.op || node.output != 0) continue;
    const std::string op = node.op->name;
    if (op != "memory_write" && op != "memory_read_write") continue;
    const double* mem = static_cast<const double*>(node.value);
    const Shape& s = node.shape;
    const std::int64_t slot = s.rows * s.batch * s.cols;
    double spread = 0;
    for (std::int64_t n = 1; n < s.slots; ++n)
      for (std::int64_t e = 0; e < slot; ++e) spread = std::max(spread, std::abs(mem[n * slot + e] - mem[e]));
    return spread;
  }
  return -1;
}
}  // namespace

TEST_CASE("with w0 = 0 and a uniform memory every slot stays identical and a first-slot w0 breaks the symmetry",
          "[models][ntm]") {
  CHECK(slot_spread(NTMConfig::Start::zero) < 1e-12);
  CHECK(slot_spread(NTMConfig::Start::first_slot) > 1e-6);
}

namespace {
// The loss of one pass of `m` over `seq` on `tape`, then every parameter's gradient.
std::vector<double> loss_and_gradients(MatNTM& m, Tape& tape, const Sequence& seq) {
  Unroller u(m, tape);
  m.params().zero_grad();
  const Var loss = u.run(seq).loss;
  tape.backward(loss);
  std::vector<double> out{loss.item()};
  for (const auto& p : m.params())
    for (std::int64_t k = 0; k < p->grad.numel(); ++k) out.push_back(p->grad.get(k));
  return out;
}

// How many calls of the op named `op` the tape holds (each call's output-0 node).
int op_calls(const Tape& tape, std::string_view op) {
  int n = 0;
  for (std::uint32_t id = 0; id < tape.size(); ++id) {
    const Tape::Node& node = tape.node(id);
    if (node.op && node.output == 0 && std::string_view(node.op->name) == op) ++n;
  }
  return n;
}

// A MatNTM with 2 read heads and `writes` write heads (seed `seed`) on a random sequence of batch B, 5 steps, run
// whole and as two halves run apart: the whole run's loss and gradients equal the halves' mean (the loss is the mean
// over the batch) in float64 to rounding. `check(tape, whole)` sees each run's tape after its backward.
template <class Check>
void check_whole_against_halves(int writes, std::uint64_t seed, std::int64_t B, std::uint64_t sequence_seed,
                                Check check) {
  NTMConfig c = small(CellKind::rnn, 2, writes);
  c.memory_init = NTMConfig::MemoryInit::random;
  MatNTM m(c, DType::f64, seed);
  m.build();
  const Sequence seq = random_sequence(m, B, 5, sequence_seed);
  Tape whole_tape(DType::f64);
  const std::vector<double> whole = loss_and_gradients(m, whole_tape, seq);
  check(whole_tape, true);
  std::vector<double> mean(whole.size(), 0.0);
  for (std::int64_t half = 0; half < 2; ++half) {
    Sequence part;
    batch_slice(seq, half * (B / 2), B / 2, part);
    Tape tape(DType::f64);
    const std::vector<double> v = loss_and_gradients(m, tape, part);
    check(tape, false);
    REQUIRE(v.size() == whole.size());
    for (std::size_t k = 0; k < v.size(); ++k) mean[k] += v[k] / 2;
  }
  double worst = 0, largest = 0;
  for (std::size_t k = 0; k < whole.size(); ++k) {
    worst = std::max(worst, std::abs(whole[k] - mean[k]));
    largest = std::max(largest, std::abs(mean[k]));
  }
  INFO(writes << " write heads, batch " << B << ": largest difference " << worst << ", largest value " << largest);
  CHECK(largest > 1e-3);
  CHECK(worst <= 1e-13 * largest);
}

// Loss and every parameter gradient of one run of 9 steps at batch 3, with the memory's chain segment;
// recompute_saved: the tape also recomputes mat's and projections' first-stage products (Tape::recompute_saved).
std::vector<double> run_with_segment(int segment, DType dtype, int writes, bool recompute_saved = false,
                                     std::int64_t batch = 3) {
  NTMConfig c = small(CellKind::rnn, 1, writes);
  c.memory_segment = segment;
  MatNTM m(c, dtype, 7);
  m.build();
  Sequence seq = random_sequence(m, batch, 9, 11);
  if (dtype == DType::f32)
    for (std::vector<Tensor>* ts : {&seq.inputs, &seq.targets})
      for (Tensor& t : *ts) t = t.to(DType::f32);
  Tape tape(dtype);
  tape.set_recompute_above(recompute_saved ? 0 : SIZE_MAX);
  return loss_and_gradients(m, tape, seq);
}
}  // namespace

TEST_CASE("recomputing the memory in backward changes no loss or gradient bit", "[models][ntm][chain]") {
  for (DType dtype : {DType::f32, DType::f64})
    for (int writes : {1, 2}) {
      const std::vector<double> keep = run_with_segment(1, dtype, writes);
      for (int segment : {2, 3, 5}) {
        INFO(name_of(dtype) << ", " << writes << " write heads, segment " << segment);
        CHECK(run_with_segment(segment, dtype, writes) == keep);
      }
      INFO(name_of(dtype) << ", " << writes << " write heads, first-stage products recomputed too");
      CHECK(run_with_segment(1, dtype, writes, true) == keep);
      CHECK(run_with_segment(3, dtype, writes, true) == keep);
    }
  // at 8 sequences, the reads and writes in one memory_writes
  for (DType dtype : {DType::f32, DType::f64}) {
    const std::vector<double> keep = run_with_segment(1, dtype, 2, false, 8);
    for (int segment : {2, 3}) {
      INFO(name_of(dtype) << ", batch 8, segment " << segment);
      CHECK(run_with_segment(segment, dtype, 2, false, 8) == keep);
    }
  }
}

// At batches 2–7 each write is an op of its own, from 8 on the reads and writes are one
// memory_writes: a batch of 8 has the loss and gradients of its two halves run apart (their mean: the loss is
// the mean over the batch), in float64 to rounding.
TEST_CASE("MatNTM at 8 sequences a batch, its writes in one pass, has the loss and gradients of its halves run "
          "apart with a write op each",
          "[models][ntm]") {
  for (int writes : {2, 3}) check_whole_against_halves(writes, 8, 8, 13, [](const Tape&, bool) {});
}

// At one sequence a batch too the reads and writes are one memory_writes (one memory state a time step), where a
// batch of 2 takes a write op each: two runs at batch 1 have the mean loss and gradients of the batch of 2, in
// float64 to rounding, and each tape holds the op calls of its path.
TEST_CASE("MatNTM at one sequence a batch, its writes in one pass, has the loss and gradients of a batch of 2 "
          "with a write op each",
          "[models][ntm]") {
  for (int writes : {2, 3})
    check_whole_against_halves(writes, 9, 2, 17, [&](const Tape& tape, bool pair) {
      CHECK(op_calls(tape, "memory_writes") == (pair ? 0 : 5));
      CHECK(op_calls(tape, "memory_write") == (pair ? 5 * (writes - 1) : 0));
      CHECK(op_calls(tape, "memory_read_write") == (pair ? 5 : 0));
    });
}

TEST_CASE("MatNTM with its memory recomputed every second step passes gradcheck unrolled 5 steps",
          "[models][ntm][gradcheck][chain]") {
  NTMConfig c = small(CellKind::rnn, 1, 1);
  c.memory_segment = 2;
  MatNTM m(c, DType::f64, 1);
  ModelGradcheckReport r =
      gradcheck_model(m, random_sequence(m, 2, 5), {.flat = {"ntm/read1/beta/", "ntm/write1/beta/"}});  // as above
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("the automatic memory segment recomputes a large memory and keeps a small one", "[models][ntm][chain]") {
  const std::size_t paper = std::size_t(16) * 120 * 6 * 6 * sizeof(float);  // 270 KiB
  CHECK(Step::auto_segment(paper) == 4);                       // three ring buffers within the 1 MiB budget
  CHECK(Step::auto_segment(Step::kChainMinBytes) == 8);        // at most 8
  CHECK(Step::auto_segment(Step::kChainMinBytes - 4) == 1);    // small: kept
  CHECK(Step::auto_segment(std::size_t(10) << 10) == 1);       // the vector NTM's memory
  CHECK(Step::auto_segment(Step::kRingBytes + 4) == 1);        // one ring buffer would not fit
  // MatNTM's default (memory_segment 0) at the paper's memory: memories in ring buffers; at a small one, none.
  for (bool large : {true, false}) {
    NTMConfig c = small(CellKind::rnn, 1, 1);
    if (large) c.slots = 120, c.slot_rows = 6, c.slot_cols = 6;
    REQUIRE(c.memory_segment == 0);
    MatNTM m(c, DType::f32, 3);
    m.build();
    Sequence seq = random_sequence(m, 16, 6, 5);
    for (std::vector<Tensor>* ts : {&seq.inputs, &seq.targets})
      for (Tensor& t : *ts) t = t.to(DType::f32);
    Tape tape(DType::f32);
    Unroller u(m, tape);
    u.run(seq);
    int in_ring = 0;
    for (std::uint32_t k = 0; k < tape.size(); ++k) in_ring += tape.node(k).chain != 0;
    INFO((large ? "270 KiB memory" : "small memory"));
    CHECK((in_ring > 0) == large);
  }
}

namespace {
// The parameter paths p/0 … p/18 of the test models' 19 projections.
std::array<std::string, 19> projection_paths() {
  std::array<std::string, 19> p;
  for (std::size_t k = 0; k < p.size(); ++k) p[k] = "p/" + std::to_string(k);
  return p;
}

// A step with the projections of a MatNTM with one read and two write heads (19, more than one projections
// op takes: two ops over the same state), whose first step first fills the tape up to `fill` nodes, so that
// the node list outgrows its allocation while the first op records its outputs.
class NineteenProjections : public Model {
 public:
  explicit NineteenProjections(std::size_t fill) : Model("p", DType::f64, 1), fill_(fill) { set_io(3, 4, 2, 2); }
  void step(Step& s) override {
    if (s.time() == 0)
      while (s.tape().size() < fill_) s.tape().constant(matrices(1, 1, 1), 0.0);
    std::array<ProjectionSpec, 19> spec;
    for (std::size_t k = 0; k < spec.size(); ++k) spec[k] = {paths_[k], 2, 2};
    std::array<Var, 19> out;
    s.projections({"h", s.input()}, spec, out);
    Var y = out[0];
    for (std::size_t k = 1; k < out.size(); ++k) y = add(y, out[k]);
    s.output(y);
  }
  std::array<std::string, 19> paths_ = projection_paths();

 private:
  std::size_t fill_;
};
}  // namespace

namespace {
double nineteen_projections_loss(std::size_t fill) {
  NineteenProjections m(fill);
  m.build();
  const Sequence seq = random_sequence(m, 2, 3, 5);
  Tape tape(DType::f64);
  Unroller u(m, tape);
  return u.run(seq).loss.item();
}
}  // namespace

TEST_CASE("projections split over two ops survive the tape's node list moving between them", "[models][ntm]") {
  // The list holds 1024 nodes at first, then 2048, 4096: filled to just below each, it moves while the first
  // op records its 16 outputs, and its old storage is freed (a shape read from there would be garbage, or
  // unmapped memory).
  const double unmoved = nineteen_projections_loss(0);
  REQUIRE(std::isfinite(unmoved));
  for (std::size_t fill : {1020, 2040, 4090, 8180, 16370, 32750}) {
    INFO("filled to " << fill << " nodes");
    CHECK(nineteen_projections_loss(fill) == unmoved);
  }
}

namespace {
// 19 projections (two groups: more than one op takes) of a state h = tanh(mat(x)), a row into rows of three
// (rows 1) or 4 x 6 into 2 x 3 (rows 4), by Step::projections (each group's V, or U, stacked once a pass) or by
// one ops projections call per group and time step (the stack made and its gradient split at each), the
// parameters created in the same order either way.
class RowProjections : public Model {
 public:
  RowProjections(bool per_step, std::int64_t rows)
      : Model("p", DType::f64, 1), per_step_(per_step), rows_(rows), out_rows_(rows == 1 ? 1 : 2) {
    set_io(1, 5, out_rows_, 3);
  }
  void step(Step& s) override {
    const Var h = tanh(s.mat("p/in", {{"x", s.input()}}, rows_, 6));
    std::array<ProjectionSpec, 19> spec;
    for (std::size_t k = 0; k < spec.size(); ++k) spec[k] = {paths_[k], out_rows_, 3, 0.01 * double(k)};
    std::array<Var, 19> out;
    if (per_step_) {
      for (std::size_t first = 0; first < spec.size(); first += Tape::kMaxOutputs) {
        const std::size_t n = std::min(spec.size() - first, Tape::kMaxOutputs);
        std::array<Projection, Tape::kMaxOutputs> p;
        for (std::size_t k = 0; k < n; ++k) {
          const ProjectionSpec& q = spec[first + k];
          p[k] = {s.parameter(q.path, "h", "U", parameter(rows_, out_rows_)),
                  s.parameter(q.path, "h", "V", parameter(6, 3)),
                  s.parameter(q.path, "", "B", parameter(out_rows_, 3), Init::Constant(q.bias))};
        }
        projections(h, std::span<const Projection>(p.data(), n), std::span<Var>(out.data() + first, n));
      }
    } else {
      s.projections({"h", h}, spec, out);
    }
    Var y = out[0];
    for (std::size_t k = 1; k < out.size(); ++k) y = add(y, hadamard(out[k], out[k - 1]));
    s.output(y);
  }
  std::array<std::string, 19> paths_ = projection_paths();

 private:
  bool per_step_;
  std::int64_t rows_, out_rows_;
};

// The loss, every parameter's gradient, and the stack_columns ops on the tape, of one run of 7 steps.
struct RowRun {
  std::vector<double> values;
  int stacks = 0;
};
RowRun row_projections_run(bool per_step, bool recompute_saved, std::int64_t rows = 1) {
  RowProjections m(per_step, rows);
  m.build();
  const Sequence seq = random_sequence(m, 3, 7, 13);
  Tape tape(DType::f64);
  tape.set_recompute_above(recompute_saved ? 0 : SIZE_MAX);
  Unroller u(m, tape);
  m.params().zero_grad();
  const Var loss = u.run(seq).loss;
  tape.backward(loss);
  RowRun r;
  r.values.push_back(loss.item());
  for (const auto& p : m.params())
    for (std::int64_t k = 0; k < p->grad.numel(); ++k) r.values.push_back(p->grad.get(k));
  r.stacks = op_calls(tape, "stack_columns");
  return r;
}
}  // namespace

namespace {
// 19 projections of a state of `rows` rows stacked once a pass and stacked at every step, T̂ (Ẑ) saved and
// recomputed: two stacks against 2 × 7, and the same loss; the gradients bit for bit (`exact`) or within float
// order.
void check_stacked_once_a_pass(std::int64_t rows, bool exact) {
  for (bool recompute : {false, true}) {
    INFO((recompute ? "recomputed" : "saved"));
    const RowRun once = row_projections_run(false, recompute, rows), every = row_projections_run(true, recompute, rows);
    CHECK(once.stacks == 2);       // two groups, once a pass
    CHECK(every.stacks == 2 * 7);  // two groups at each of 7 steps
    REQUIRE(once.values.size() == every.values.size());
    REQUIRE(once.values.size() > 19 * 10);
    for (std::size_t k = 0; k < once.values.size(); ++k) {
      INFO((k == 0 ? "loss" : "gradient value ") << k);
      if (k == 0 || exact) CHECK(once.values[k] == every.values[k]);  // forward is the same
      else CHECK(once.values[k] == Approx(every.values[k]).epsilon(1e-5).margin(1e-7));
    }
  }
}
}  // namespace

// Stacked once, V_s's gradient is one deferred product over the unroll (Tape::set_deferred_products); stacked
// at every step, one product a step: the same sums in another order.
TEST_CASE("a row state's projections stack each group's V once a pass, with the loss and gradients of stacking "
          "at every time step",
          "[models][ntm]") {
  check_stacked_once_a_pass(1, false);
}

// U_s's gradient is each step's term added in the order of the steps' backward, as the split at every step adds
// them to each U's: the same sums in the same order.
TEST_CASE("a matrix state's projections stack each group's U once a pass, with the loss and gradients of stacking "
          "at every time step, bit for bit",
          "[models][ntm]") {
  check_stacked_once_a_pass(4, true);
}


namespace {
// Three training steps of the copy task at sequences of 100 frames, batch 4, a memory of 128 slots of 8x8
// (128 KiB per pass: the trainer recomputes it, Step::auto_segment), with `reads` read and `writes` write
// heads, and `segment` for ntm.memory_segment: the losses and the parameters after.
std::pair<std::vector<double>, std::vector<double>> train_long(int reads, int writes, int segment) {
  Config c = testing::small_config("matntm", 100, 4);
  c.set("task.min_length", "100", "test");
  c.set("ntm.slots", "128", "test");
  c.set("ntm.slot_rows", "8", "test");
  c.set("ntm.slot_cols", "8", "test");
  c.set("ntm.read_heads", std::to_string(reads), "test");
  c.set("ntm.write_heads", std::to_string(writes), "test");
  c.set("ntm.memory_segment", std::to_string(segment), "test");
  Trainer t(c);
  std::vector<double> losses, params;
  for (int k = 0; k < 3; ++k) losses.push_back(t.step().loss);
  for (const auto& p : t.model().params())
    for (std::int64_t k = 0; k < p->value.numel(); ++k) params.push_back(p->value.get(k));
  return {losses, params};
}
}  // namespace

TEST_CASE("MatNTM with two write heads, or two read heads, trains on sequences of 100 frames", "[models][ntm][chain]") {
  REQUIRE(Step::auto_segment(std::size_t(4) * 128 * 8 * 8 * sizeof(float)) > 1);  // the memory is recomputed
  for (const auto& [reads, writes] : {std::pair{1, 2}, std::pair{2, 1}}) {
    INFO(reads << " read and " << writes << " write heads");
    const auto recomputed = train_long(reads, writes, 0);
    for (double loss : recomputed.first) CHECK(std::isfinite(loss));
    // Recomputing the memory changes no bit: equal to the run that keeps every step's memory.
    const auto kept = train_long(reads, writes, 1);
    CHECK(recomputed.first == kept.first);
    CHECK(recomputed.second == kept.second);
  }
}

TEST_CASE("MatNTM with a feed-forward controller passes gradcheck unrolled 3 steps, and keeps no controller state",
          "[models][ntm][gradcheck][ff]") {
  MatNTM m(small(CellKind::ff, 2, 1), DType::f64, 3);
  for (const StateDecl& s : m.states()) {
    INFO(s.name);
    CHECK(s.name.rfind("ctrl/", 0) != 0);  // its past reaches it only through the reads
  }
  m.build();
  CHECK_FALSE(m.params().contains("ntm/ctrl/l1/h/U"));
  CHECK(m.params().contains("ntm/ctrl/l1/r2/U"));
  // as with a MatRNN controller: content addressing over the near-uniform early memory is all but flat
  ModelGradcheckReport r = gradcheck_model(
      m, random_sequence(m, 2, 3), {.flat = {"ntm/read1/beta/", "ntm/read2/beta/", "ntm/write1/beta/", "ntm/write1/key/"}});
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.elements_checked == m.params().element_count());
}

TEST_CASE("MatNTM with its controller and logits clipped passes gradcheck away from the clip's edges",
          "[models][ntm][gradcheck][clip]") {
  NTMConfig c = small(CellKind::lstm, 1, 1);
  c.forget_bias = 1;
  c.controller_clip = 0.6;
  c.clip_logits = true;
  MatNTM m(c, DType::f64, 3);
  // as with the unclipped controllers: content addressing over the near-uniform early memory is all but flat
  ModelGradcheckReport r = gradcheck_model(
      m, random_sequence(m, 2, 3), {.flat = {"ntm/read1/beta/", "ntm/write1/beta/", "ntm/write1/gamma/", "ntm/write1/key/"}});
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("MatNTM's clipped logits stay within ±controller.clip, and an unclipped run's do not", "[models][ntm][clip]") {
  for (const bool clipped : {false, true}) {
    NTMConfig c = small(CellKind::rnn, 1, 1);
    c.controller_clip = clipped ? 0.2 : 0.0;
    c.clip_logits = clipped;
    MatNTM m(c, DType::f64, 6);
    m.build();
    perturb_parameters(m, 1.0, 7);
    const Sequence seq = random_sequence(m, 2, 4, 8);
    Tape tape(DType::f64);
    Unroller u(m, tape);
    double largest = 0;
    for (const Var& y : u.run(seq).logits) {
      const Tensor t = y.value_copy();
      for (std::int64_t k = 0; k < t.numel(); ++k) largest = std::max(largest, std::abs(t.get(k)));
    }
    INFO((clipped ? "clipped" : "not clipped") << ": largest |logit| " << largest);
    if (clipped) CHECK(largest <= 0.2);
    else CHECK(largest > 0.2);
  }
}

TEST_CASE("the controller keys and ntm.cosine_eps reach the models, and bad values are refused naming the key",
          "[models][ntm][config][clip][ff]") {
  Config c = testing::small_config("matntm");
  const auto task = make_task(c);
  c.set("ntm.controller", "ff", "test");
  c.set("controller.clip", "20", "test");
  c.set("controller.clip_logits", "true", "test");
  auto m = make_model(c, *task, DType::f64);
  const auto& ntm = dynamic_cast<const MatNTM&>(*m).config();
  CHECK(ntm.controller == CellKind::ff);
  CHECK(ntm.controller_clip == 20);
  CHECK(ntm.clip_logits);
  c.set("model", "matlstm", "test");
  auto lstm = make_model(c, *task, DType::f64);
  CHECK(dynamic_cast<const RecurrentModel&>(*lstm).config().clip == 20);
  c.set("controller.clip", "-1", "test");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Catch::Contains("controller.clip = -1"));
  c.set("controller.clip", "0", "test");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Catch::Contains("controller.clip_logits"));
  c.set("model", "matntm", "test");
  c.set("controller.clip_logits", "false", "test");
  c.set("ntm.controller", "gru", "test");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Catch::Contains("ntm.controller = \"gru\"") &&
                                                            Catch::Contains("\"rnn\", \"lstm\" or \"ff\""));
  c.set("ntm.controller", "lstm", "test");
  CHECK(dynamic_cast<const MatNTM&>(*make_model(c, *task, DType::f64)).config().cosine_eps == 0);
  c.set("ntm.cosine_eps", "1e-6", "test");
  CHECK(dynamic_cast<const MatNTM&>(*make_model(c, *task, DType::f64)).config().cosine_eps == 1e-6);
  c.set("ntm.cosine_eps", "-1e-6", "test");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Catch::Contains("ntm.cosine_eps = -1e-06") &&
                                                            Catch::Contains("must be ≥ 0"));
}

// clip.state_gradient (Model::set_state_gradient_clip): every state passes to the next time step through
// clip_gradient. A bound no gradient reaches changes nothing but the order of additions; a small one changes the
// gradient of every parameter behind the recurrence and leaves the loss as it is.
TEST_CASE("MatNTM with its states' gradient clipped: the same loss, the same gradient under a bound never reached, "
          "another under a small one", "[models][ntm][clip]") {
  NTMConfig c = small(CellKind::rnn, 1, 1);
  c.memory_init = NTMConfig::MemoryInit::learned;
  auto gradients = [&](double clip, double& loss) {
    MatNTM m(c, DType::f64, 4);
    m.set_state_gradient_clip(clip);
    m.build();
    perturb_parameters(m, 0.3, 5);
    const Sequence seq = random_sequence(m, 2, 6);
    Tape tape(DType::f64);
    Unroller u(m, tape);
    m.params().zero_grad();
    const Var l = u.run(seq).loss;
    loss = l.item();
    tape.backward(l);
    std::vector<Tensor> g;
    for (const auto& p : m.params()) g.push_back(p->grad);
    return g;
  };
  double l0 = 0, l1 = 0, l2 = 0;
  const std::vector<Tensor> off = gradients(0, l0), far = gradients(1e6, l1), small_clip = gradients(1e-4, l2);
  CHECK(l1 == l0);
  CHECK(l2 == l0);
  REQUIRE(off.size() == far.size());
  int differ = 0;
  for (std::size_t k = 0; k < off.size(); ++k)
    for (std::int64_t e = 0; e < off[k].numel(); ++e) {
      CHECK(far[k].get(e) == Approx(off[k].get(e)).epsilon(1e-12).margin(1e-15));
      differ += std::abs(small_clip[k].get(e) - off[k].get(e)) > 1e-6 * (1 + std::abs(off[k].get(e)));
    }
  CHECK(differ > 0);
}
