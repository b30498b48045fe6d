// The priority sort task (models/tasks/priority_sort.hpp): its frames against a hand-written example, the
// number it writes, its drawn batches sorted by their own priorities, its refusals.
#include <catch2/catch.hpp>

#include <algorithm>

#include "matmem/models/tasks/priority_sort.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;

namespace {
using Frame = std::vector<std::vector<double>>;
void check_frame(const Tensor& f, std::int64_t b, const Frame& want, const std::string& what) {
  REQUIRE(f.shape().rows == std::int64_t(want.size()));
  for (std::int64_t i = 0; i < f.shape().rows; ++i)
    for (std::int64_t j = 0; j < f.shape().cols; ++j) {
      INFO(what << ", sequence " << b << ", (" << i << "," << j << ")");
      CHECK(f.at(b, i, j) == Approx(want[std::size_t(i)][std::size_t(j)]).margin(1e-6));
    }
}
// One 1×2 matrix per sequence of a batch of 2: rows {sequence 0's, sequence 1's}.
Tensor pair(std::vector<double> s0, std::vector<double> s1) {
  Tensor m(DType::f32, matrices(2, 1, 2));
  for (std::int64_t j = 0; j < 2; ++j) {
    m.set(m.shape().offset(0, 0, 0, j), s0[std::size_t(j)]);
    m.set(m.shape().offset(1, 0, 0, j), s1[std::size_t(j)]);
  }
  return m;
}
}  // namespace

TEST_CASE("priority_sort: the frames of a hand-written example, highest priority first", "[tasks][priority_sort]") {
  // Sequence 0: [1 0] at 0.1, [0 1] at 0.9, [1 1] at −0.5: writes [0 1], [1 0].
  // Sequence 1: [0 0] at −0.2, [1 0] at −0.8, [0 1] at 0.4: writes [0 1], [0 0].
  PrioritySortTask task({.rows = 1, .cols = 2, .inputs = 3, .outputs = 2, .batch = 2});
  Sequence s;
  task.write({pair({1, 0}, {0, 0}), pair({0, 1}, {1, 0}), pair({1, 1}, {0, 1})}, {0.1, -0.2, 0.9, -0.8, -0.5, 0.4}, 2, s);
  const std::vector<std::vector<Frame>> inputs = {  // [sequence][step]
      {{{1, 0}, {0.1, 0.1}, {0, 0}}, {{0, 1}, {0.9, 0.9}, {0, 0}}, {{1, 1}, {-0.5, -0.5}, {0, 0}},
       {{0, 0}, {0, 0}, {1, 1}}, {{0, 0}, {0, 0}, {0, 0}}, {{0, 0}, {0, 0}, {0, 0}}},
      {{{0, 0}, {-0.2, -0.2}, {0, 0}}, {{1, 0}, {-0.8, -0.8}, {0, 0}}, {{0, 1}, {0.4, 0.4}, {0, 0}},
       {{0, 0}, {0, 0}, {1, 1}}, {{0, 0}, {0, 0}, {0, 0}}, {{0, 0}, {0, 0}, {0, 0}}}};
  const std::vector<std::vector<Frame>> targets = {{{{0, 1}}, {{1, 0}}}, {{{0, 1}}, {{0, 0}}}};
  REQUIRE(s.inputs.size() == 6);
  REQUIRE(s.targets.size() == 2);
  CHECK(s.target_steps == std::vector<std::int64_t>{4, 5});
  for (std::int64_t b = 0; b < 2; ++b) {
    for (std::size_t t = 0; t < 6; ++t) check_frame(s.inputs[t], b, inputs[std::size_t(b)][t], "input " + std::to_string(t));
    for (std::size_t k = 0; k < 2; ++k) check_frame(s.targets[k], b, targets[std::size_t(b)][k], "target " + std::to_string(k));
  }
}

TEST_CASE("priority_sort: m inputs write round(m · outputs / inputs), the paper's 16 of 20", "[tasks][priority_sort]") {
  PrioritySortTask task({.inputs = 20, .outputs = 16});
  CHECK(task.outputs_for(20) == 16);
  CHECK(task.outputs_for(40) == 32);
  CHECK(task.outputs_for(10) == 8);
  CHECK(task.outputs_for(5) == 4);
  CHECK(task.outputs_for(1) == 1);
  Rng rng(3);
  const Sequence s = task.sample(rng);
  CHECK(s.inputs.size() == 20 + 1 + 16);
  CHECK(s.targets.size() == 16);
  CHECK(task.sample_size(rng, 40).targets.size() == 32);
}

TEST_CASE("priority_sort: drawn batches write their own highest-priority matrices in descending order", "[tasks][priority_sort]") {
  PrioritySortTask task({.rows = 2, .cols = 3, .inputs = 8, .outputs = 5, .batch = 4});
  Rng rng(11);
  for (int k = 0; k < 20; ++k) {
    const Sequence s = task.sample(rng);
    for (std::int64_t b = 0; b < 4; ++b) {
      std::vector<std::pair<double, std::int64_t>> by_priority;
      for (std::int64_t i = 0; i < 8; ++i) {
        const double p = s.inputs[std::size_t(i)].at(b, 2, 0);
        CHECK((p >= -1 && p < 1));
        CHECK(s.inputs[std::size_t(i)].at(b, 2, 2) == p);
        by_priority.push_back({-p, i});
      }
      std::sort(by_priority.begin(), by_priority.end());
      for (std::int64_t q = 0; q < 5; ++q)
        for (std::int64_t i = 0; i < 2; ++i)
          for (std::int64_t j = 0; j < 3; ++j)
            REQUIRE(s.targets[std::size_t(q)].at(b, i, j) ==
                    s.inputs[std::size_t(by_priority[std::size_t(q)].second)].at(b, i, j));
    }
  }
}

TEST_CASE("priority_sort: impossible settings are refused", "[tasks][priority_sort][errors]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(PrioritySortTask({.inputs = 4, .outputs = 5}), Contains("outputs"));
  CHECK_THROWS_WITH(PrioritySortTask({.outputs = 0}), Contains("outputs"));
  CHECK_THROWS_AS(PrioritySortTask({.rows = 0}), Error);
}
