// The dynamic N-gram task (models/tasks/ngrams.hpp): its frames and optimal cost against hand-worked examples,
// the Beta(½, ½) tables behind its draws, its refusals.
#include <catch2/catch.hpp>

#include <cmath>

#include "matmem/models/tasks/ngrams.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;

TEST_CASE("ngrams: the optimal predictor's cost by hand, (N₁ + ½)/(N + 1) per context", "[tasks][ngrams]") {
  // One-bit contexts, bits 1 1 0 1: the first has no context (½, 1 bit); then
  //   ctx 1, no counts: P(1) = ½, a 1: 1 bit;  ctx 1, one 1: P(1) = 1.5/2, a 0: log₂ 4 = 2 bits;
  //   ctx 0, no counts: ½, a 1: 1 bit.
  CHECK(NgramTask::optimal_cost({1, 1, 0, 1}, 1) == Approx(5.0).epsilon(1e-12));
  // Five-bit contexts, eight zeros: five bits without a context, then three in context 00000:
  //   ½ · ¾ · (2.5/3) → 1 + log₂(4/3) + log₂(6/5) bits.
  CHECK(NgramTask::optimal_cost({0, 0, 0, 0, 0, 0, 0, 0}, 5) ==
        Approx(5 + 1 + std::log2(4.0 / 3.0) + std::log2(6.0 / 5.0)).epsilon(1e-12));
  // Two-bit contexts, 1 1 0 1 1 0: two bits without one; contexts 11 and 10, each new (2 bits); then 01 new
  // (1 bit) and 11 with one 0: P(0) = 1.5/2, a 0: log₂(4/3).
  CHECK(NgramTask::optimal_cost({1, 1, 0, 1, 1, 0}, 2) == Approx(5 + std::log2(4.0 / 3.0)).epsilon(1e-12));
}

TEST_CASE("ngrams: the frames of a hand-written batch: the input the bit before the target", "[tasks][ngrams]") {
  // Order 2 (one-bit contexts); sequence 0: 1 1 0 1, sequence 1: 0 1 1 0.
  NgramTask task({.order = 2, .length = 4, .batch = 2});
  Sequence s;
  task.write({{1, 1, 0, 1}, {0, 1, 1, 0}}, s);
  const std::vector<std::vector<double>> inputs = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};  // [step][sequence]
  const std::vector<std::vector<double>> targets = {{1, 0}, {1, 1}, {0, 1}, {1, 0}};
  REQUIRE(s.inputs.size() == 4);
  REQUIRE(s.targets.size() == 4);
  CHECK(s.target_steps == std::vector<std::int64_t>{0, 1, 2, 3});
  CHECK(s.kind == TargetKind::probabilities);
  for (std::size_t t = 0; t < 4; ++t)
    for (std::int64_t b = 0; b < 2; ++b) {
      INFO("step " << t << ", sequence " << b);
      CHECK(s.inputs[t].shape() == matrices(2, 1, 1));
      CHECK(s.inputs[t].at(b, 0, 0) == inputs[t][std::size_t(b)]);
      CHECK(s.targets[t].at(b, 0, 0) == targets[t][std::size_t(b)]);
    }
  // Sequence 1: no context ½, a 0: 1; ctx 0 ½ a 1: 1; ctx 1 ½ a 1: 1; ctx 1 (one 1) P(1) = ¾, a 0: 2.
  REQUIRE(s.optimal_cost.size() == 2);
  CHECK(s.optimal_cost[0] == Approx(5.0).epsilon(1e-12));
  CHECK(s.optimal_cost[1] == Approx(5.0).epsilon(1e-12));
  Sequence part;
  batch_slice(s, 1, 1, part);
  CHECK(part.optimal_cost == std::vector<double>{s.optimal_cost[1]});
}

TEST_CASE("ngrams: each sequence's table is Beta(½, ½): its frequencies have variance 1/8", "[tasks][ngrams]") {
  // Order 2, long sequences: the share of 1s after a context estimates that context's p. Beta(½, ½) has mean ½
  // and variance 1/8 (a uniform p: 1/12); the estimate's own variance, E[p(1−p)]/n ≈ 1/(8n), is small.
  NgramTask task({.order = 2, .length = 4000, .batch = 100});
  Rng rng(9);
  const Sequence s = task.sample(rng);
  double sum = 0, squares = 0, n = 0;
  for (std::int64_t b = 0; b < 100; ++b) {
    double ones[2] = {0, 0}, seen[2] = {0, 0};
    for (std::size_t t = 0; t < s.inputs.size(); ++t) {
      const int ctx = int(s.inputs[t].at(b, 0, 0));
      ones[ctx] += s.targets[t].at(b, 0, 0), seen[ctx] += 1;
    }
    for (int c = 0; c < 2; ++c)
      if (seen[c] > 200) sum += ones[c] / seen[c], squares += std::pow(ones[c] / seen[c], 2), n += 1;
  }
  const double mean = sum / n, var = squares / n - mean * mean;
  CHECK(mean == Approx(0.5).margin(0.06));
  CHECK(var == Approx(0.125).margin(0.02));
  // The optimal cost stays below a bit per bit: the tables are far from fair coins.
  for (double c : s.optimal_cost) CHECK(c < 4000);
}

TEST_CASE("ngrams: the first N − 1 bits are fair coins, whatever the table", "[tasks][ngrams]") {
  // Order 17: 16 bits of context, so sequences of 16 bits are all start, each bit 1 bit to the optimal
  // predictor. Fair coins make a sequence of 16 zeros a 1-in-65,536 event (0.03 expected of 2,000); bits
  // drawn from the table from an all-zero context would give one whenever p(00…0) is small (about one
  // sequence in ten has p < 0.03), and half the ones count's spread would be gone.
  NgramTask task({.order = 17, .length = 16, .batch = 2000});
  Rng rng(4);
  const Sequence s = task.sample(rng);
  double ones = 0;
  int all_zero = 0;
  for (std::int64_t b = 0; b < 2000; ++b) {
    double n = 0;
    for (const Tensor& t : s.targets) n += t.at(b, 0, 0);
    ones += n, all_zero += n == 0;
  }
  CHECK(all_zero <= 2);
  CHECK(ones == Approx(16000).margin(4 * 89.4));  // 2,000 · 16 · ½ ± 4σ
  for (double c : s.optimal_cost) REQUIRE(c == 16.0);
  // Order 6, 200 bits: the first five are the start, the rest the table's, whose counts make the optimal cost
  // of almost every sequence less than a bit a bit.
  NgramTask six({.order = 6, .length = 200, .batch = 64});
  const Sequence t = six.sample(rng);
  int below = 0;
  for (double c : t.optimal_cost) below += c < 200;
  CHECK(below >= 60);
}

TEST_CASE("ngrams: a seed gives the same batch, reused buffers or not", "[tasks][ngrams]") {
  NgramTask task({.order = 6, .length = 50, .batch = 3});
  Rng a(2), b(2);
  Sequence reused;
  for (int k = 0; k < 5; ++k) {
    const Sequence fresh = task.sample(a);
    task.sample_into(b, reused);
    CHECK(fresh.optimal_cost == reused.optimal_cost);
    for (std::size_t t = 0; t < fresh.inputs.size(); ++t)
      for (std::int64_t e = 0; e < 3; ++e) REQUIRE(fresh.targets[t].get(e) == reused.targets[t].get(e));
  }
}

TEST_CASE("ngrams: impossible settings are refused", "[tasks][ngrams][errors]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(NgramTask({.order = 1}), Contains("order"));
  CHECK_THROWS_WITH(NgramTask({.length = 0}), Contains("length"));
  CHECK_THROWS_AS(NgramTask({.batch = 0}), Error);
}
