// The repeat copy task (models/tasks/repeat_copy.hpp): its frames against a hand-written example, the repeat
// count's normalisation, its draws, sizes and refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "matmem/models/tasks/repeat_copy.hpp"
#include "matmem/runtime/error.hpp"
#include "frame_check.hpp"

using namespace matmem;

namespace {
using testing::check_frame;
using testing::Frame;
Tensor matrix(std::initializer_list<double> v) {  // one 1×2 matrix, a batch of 1
  Tensor m(DType::f32, matrices(1, 1, 2));
  std::int64_t k = 0;
  for (double x : v) m.set(k++, x);
  return m;
}
}  // namespace

TEST_CASE("repeat_copy: the frames of a hand-written example, step by step", "[tasks][repeat_copy]") {
  // X1 = [1 0], X2 = [0 1], 2 repeats; repeats range 1..4: μ = 2.5, σ² = (4² − 1)/12 = 1.25, ñ = −0.5/√1.25.
  RepeatCopyTask task({.rows = 1, .cols = 2, .min_length = 1, .max_length = 5, .min_repeats = 1, .max_repeats = 4,
                       .batch = 1});
  Sequence s;
  task.write({matrix({1, 0}), matrix({0, 1})}, 2, s);
  const double n = -0.5 / std::sqrt(1.25);
  const std::vector<Frame> inputs = {
      {{1, 0}, {0, 0}, {0, 0}},  // X1
      {{0, 1}, {0, 0}, {0, 0}},  // X2
      {{0, 0}, {1, 1}, {n, n}},  // the delimiter and the count
      {{0, 0}, {0, 0}, {0, 0}}, {{0, 0}, {0, 0}, {0, 0}}, {{0, 0}, {0, 0}, {0, 0}},
      {{0, 0}, {0, 0}, {0, 0}}, {{0, 0}, {0, 0}, {0, 0}}};
  const std::vector<Frame> targets = {{{1, 0}, {0, 0}}, {{0, 1}, {0, 0}}, {{1, 0}, {0, 0}}, {{0, 1}, {0, 0}},
                                      {{0, 0}, {1, 1}}};  // X1 X2 X1 X2, then the end marker
  REQUIRE(s.inputs.size() == inputs.size());
  REQUIRE(s.targets.size() == targets.size());
  CHECK(s.target_steps == std::vector<std::int64_t>{3, 4, 5, 6, 7});
  for (std::size_t t = 0; t < inputs.size(); ++t) check_frame(s.inputs[t], 0, inputs[t], "input " + std::to_string(t));
  for (std::size_t k = 0; k < targets.size(); ++k) check_frame(s.targets[k], 0, targets[k], "target " + std::to_string(k));
  CHECK(s.kind == TargetKind::bits);
  CHECK(task.input_rows() == 3);
  CHECK(task.output_rows() == 2);
}

TEST_CASE("repeat_copy: the count is normalised to mean 0 and variance 1 over the repeat range", "[tasks][repeat_copy]") {
  RepeatCopyTask task({.min_repeats = 1, .max_repeats = 10});
  double sum = 0, squares = 0;
  for (std::int64_t n = 1; n <= 10; ++n) sum += task.normalised_repeats(n), squares += std::pow(task.normalised_repeats(n), 2);
  CHECK(sum / 10 == Approx(0).margin(1e-12));
  CHECK(squares / 10 == Approx(1).epsilon(1e-12));
  CHECK(task.normalised_repeats(10) == Approx(4.5 / std::sqrt(8.25)).epsilon(1e-12));
  CHECK(RepeatCopyTask({.min_repeats = 3, .max_repeats = 3}).normalised_repeats(3) == 0.0);  // one count: σ = 1
}

TEST_CASE("repeat_copy: drawn batches repeat their matrices n times, lengths and repeats over their ranges", "[tasks][repeat_copy]") {
  RepeatCopyTask task({.rows = 2, .cols = 2, .min_length = 1, .max_length = 3, .min_repeats = 1, .max_repeats = 3, .batch = 3});
  Rng rng(5), again(5);
  Sequence reused;
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  for (int k = 0; k < 200; ++k) {
    const Sequence s = task.sample(rng);
    task.sample_into(again, reused);
    // Frames l + nl + 2, targets nl + 1: l is where the delimiter is, n from the count.
    std::int64_t l = 0;
    while (s.inputs[std::size_t(l)].at(0, 2, 0) == 0) ++l;
    const std::int64_t n = std::int64_t(s.targets.size() - 1) / l;
    REQUIRE(std::int64_t(s.inputs.size()) == l + n * l + 2);
    CHECK(s.inputs[std::size_t(l)].at(1, 3, 1) == Approx(task.normalised_repeats(n)).margin(1e-6));
    seen.insert({l, n});
    for (std::int64_t q = 0; q < n * l; ++q)
      for (std::int64_t b = 0; b < 3; ++b)
        for (std::int64_t i = 0; i < 2; ++i)
          for (std::int64_t j = 0; j < 2; ++j) {
            REQUIRE(s.targets[std::size_t(q)].at(b, i, j) == s.inputs[std::size_t(q % l)].at(b, i, j));
            REQUIRE(s.targets[std::size_t(q)].at(b, 2, j) == 0);
          }
    for (std::size_t t = 0; t < s.inputs.size(); ++t)
      for (std::int64_t e = 0; e < s.inputs[t].numel(); ++e) REQUIRE(s.inputs[t].get(e) == reused.inputs[t].get(e));
  }
  CHECK(seen.size() == 9);  // every (l, n) of 1..3 × 1..3
}

TEST_CASE("repeat_copy: a size is the length or the repeat count, the other drawn or held", "[tasks][repeat_copy]") {
  Rng rng(1);
  RepeatCopyTask by_length({.min_repeats = 1, .max_repeats = 10, .fixed_size = 4});
  const Sequence a = by_length.sample_size(rng, 7);  // l = 7, n = 4
  CHECK(a.inputs.size() == 7 + 28 + 2);
  CHECK(by_length.size_range() == std::pair<std::int64_t, std::int64_t>{1, 10});
  RepeatCopyTask by_repeats({.min_length = 2, .max_length = 9, .size_by = "repeats", .fixed_size = 3});
  const Sequence b = by_repeats.sample_size(rng, 12);  // l = 3, n = 12
  CHECK(b.inputs.size() == 3 + 36 + 2);
  CHECK(std::string(by_repeats.size_name()) == "repeats");
  CHECK(by_repeats.size_range() == std::pair<std::int64_t, std::int64_t>{1, 10});
  RepeatCopyTask drawn({.min_length = 1, .max_length = 10, .min_repeats = 2, .max_repeats = 2});
  CHECK(drawn.sample_size(rng, 5).inputs.size() == 5 + 10 + 2);  // n drawn from 2..2
}

TEST_CASE("repeat_copy: impossible settings are refused", "[tasks][repeat_copy][errors]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(RepeatCopyTask({.min_repeats = 0}), Contains("min_repeats"));
  CHECK_THROWS_WITH(RepeatCopyTask({.min_length = 4, .max_length = 3}), Contains("min_length"));
  CHECK_THROWS_WITH(RepeatCopyTask({.size_by = "items"}), Contains("size_by"));
  CHECK_THROWS_AS(RepeatCopyTask({.fixed_size = -1}), Error);
}
