// The keep/discard task (models/tasks/keep_discard.hpp): its frames against a hand-written example, the recalls
// of drawn batches, the sizes' relations to 16 slots, determinism, the cost, and the refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "matmem/models/registry.hpp"
#include "matmem/models/tasks/keep_discard.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/runtime/error.hpp"
#include "frame_check.hpp"

using namespace matmem;

namespace {
using testing::check_frame;
using testing::Frame;
Tensor matrix(std::initializer_list<double> v) {  // one 2×2 matrix, row-major, a batch of 1
  Tensor m(DType::f32, matrices(1, 2, 2));
  std::int64_t k = 0;
  for (double x : v) m.set(k++, x);
  return m;
}

// What a drawn batch is, read back from its input frames by their flag rows alone.
struct Layout {
  std::vector<std::vector<std::int64_t>> frames;  // each sub-sequence's input steps
  std::vector<bool> keep;
};
// Walks the inputs as the header lays them out and checks every target against the input frame it copies:
// each discard's right after its delimiter, the keep ones after the recall delimiter, in order.
Layout check_recalls(const Sequence& s, const KeepDiscardOptions& o) {
  const std::int64_t r = o.rows, c = o.cols, B = o.batch;
  auto row = [&](std::int64_t t, std::int64_t i) { return s.inputs[std::size_t(t)].at(0, i, 0); };
  auto blank = [&](std::int64_t t) {
    for (std::int64_t e = 0; e < s.inputs[std::size_t(t)].numel(); ++e)
      if (s.inputs[std::size_t(t)].get(e) != 0) return false;
    return true;
  };
  std::int64_t k = 0;  // the next target
  auto recall = [&](std::int64_t& t, const std::vector<std::int64_t>& frames) {
    for (std::int64_t f : frames) {
      REQUIRE(k < std::int64_t(s.targets.size()));
      REQUIRE(s.target_steps[std::size_t(k)] == t);
      REQUIRE(blank(t));
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t i = 0; i < r; ++i)
          for (std::int64_t j = 0; j < c; ++j)
            REQUIRE(s.targets[std::size_t(k)].at(b, i, j) == s.inputs[std::size_t(f)].at(b, i, j));
      ++k, ++t;
    }
  };
  Layout layout;
  std::int64_t t = 0;
  while (row(t, r + 2) == 0) {
    std::vector<std::int64_t> frames;
    for (; row(t, r + 1) == 0; ++t) frames.push_back(t);
    const bool keep = row(t, r) == 1;  // the delimiter's flag
    for (std::int64_t f : frames)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0; j < c; ++j) REQUIRE(s.inputs[std::size_t(f)].at(b, r, j) == (keep ? 1 : 0));
    ++t;
    if (!keep) recall(t, frames);
    layout.frames.push_back(frames);
    layout.keep.push_back(keep);
  }
  ++t;  // the recall delimiter
  for (std::size_t j = 0; j < layout.frames.size(); ++j)
    if (layout.keep[j]) recall(t, layout.frames[j]);
  REQUIRE(t == std::int64_t(s.inputs.size()));
  REQUIRE(k == std::int64_t(s.targets.size()));
  return layout;
}
}  // namespace

TEST_CASE("keep_discard: the frames of a hand-written example, step by step", "[tasks][keep_discard]") {
  // Sub-sequences A = (A1, A2) keep, B = (B1) discard, C = (C1) keep, of 2×2 matrices. Input rows: the two content
  // rows, the keep flag, the delimiter, the recall delimiter.
  KeepDiscardTask task({.rows = 2, .cols = 2, .min_subsequences = 1, .max_subsequences = 3, .keep = 1, .batch = 1});
  const Tensor A1 = matrix({1, 0, 0, 0}), A2 = matrix({0, 1, 1, 0}), B1 = matrix({1, 1, 0, 1}), C1 = matrix({0, 0, 1, 1});
  Sequence s;
  task.write({{A1, A2}, {B1}, {C1}}, {true, false, true}, s);
  const std::vector<Frame> inputs = {
      {{1, 0}, {0, 0}, {1, 1}, {0, 0}, {0, 0}},  // 0: A1, keep
      {{0, 1}, {1, 0}, {1, 1}, {0, 0}, {0, 0}},  // 1: A2, keep
      {{0, 0}, {0, 0}, {1, 1}, {1, 1}, {0, 0}},  // 2: A's delimiter, keep
      {{1, 1}, {0, 1}, {0, 0}, {0, 0}, {0, 0}},  // 3: B1, discard
      {{0, 0}, {0, 0}, {0, 0}, {1, 1}, {0, 0}},  // 4: B's delimiter, discard
      {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}},  // 5: blank, recall B1
      {{0, 0}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},  // 6: C1, keep
      {{0, 0}, {0, 0}, {1, 1}, {1, 1}, {0, 0}},  // 7: C's delimiter, keep
      {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {1, 1}},  // 8: the recall delimiter
      {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}},  // 9: blank, recall A1
      {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}},  // 10: blank, recall A2
      {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}}};  // 11: blank, recall C1
  const std::vector<Frame> targets = {{{1, 1}, {0, 1}},   // B1
                                      {{1, 0}, {0, 0}},   // A1
                                      {{0, 1}, {1, 0}},   // A2
                                      {{0, 0}, {1, 1}}};  // C1
  REQUIRE(s.inputs.size() == inputs.size());  // 2·4 matrices + 3 delimiters + the recall delimiter
  REQUIRE(s.targets.size() == targets.size());
  CHECK(s.target_steps == std::vector<std::int64_t>{5, 9, 10, 11});  // only these steps are scored
  CHECK(s.lane_mask.empty());                                        // every sequence at each of them
  for (std::size_t t = 0; t < inputs.size(); ++t) check_frame(s.inputs[t], 0, inputs[t], "input " + std::to_string(t));
  for (std::size_t k = 0; k < targets.size(); ++k) check_frame(s.targets[k], 0, targets[k], "target " + std::to_string(k));
  CHECK(s.kind == TargetKind::bits);
  CHECK(task.input_rows() == 5);
  CHECK(task.output_rows() == 2);
}

TEST_CASE("keep_discard: drawn batches recall each discard after its delimiter and the keep ones in order at the end",
          "[tasks][keep_discard]") {
  const KeepDiscardOptions o{.rows = 2, .cols = 3, .min_subsequences = 3, .max_subsequences = 6, .keep = 2,
                             .min_keep_length = 1, .max_keep_length = 2, .min_discard_length = 3,
                             .max_discard_length = 5, .batch = 3};
  KeepDiscardTask task(o);
  std::set<std::int64_t> counts, keep_lengths, discard_lengths;
  std::set<std::size_t> keep_positions;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    Rng rng(seed);
    const Sequence s = task.sample(rng);
    const Layout l = check_recalls(s, o);
    const std::int64_t n = std::int64_t(l.frames.size());
    counts.insert(n);
    CHECK(std::count(l.keep.begin(), l.keep.end(), true) == 2);
    CHECK(l.keep[0]);  // keep_first
    std::int64_t frames = 0;
    for (std::size_t j = 0; j < l.frames.size(); ++j) {
      (l.keep[j] ? keep_lengths : discard_lengths).insert(std::int64_t(l.frames[j].size()));
      frames += std::int64_t(l.frames[j].size());
      if (l.keep[j]) keep_positions.insert(j);
    }
    CHECK(std::int64_t(s.inputs.size()) == 2 * frames + n + 1);
  }
  CHECK(counts == std::set<std::int64_t>{3, 4, 5, 6});
  CHECK(keep_lengths == std::set<std::int64_t>{1, 2});  // each kind's lengths from its own range
  CHECK(discard_lengths == std::set<std::int64_t>{3, 4, 5});
  CHECK(keep_positions == std::set<std::size_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("keep_discard: without keep_first the keep sub-sequences are anywhere", "[tasks][keep_discard]") {
  const KeepDiscardOptions o{.rows = 1, .cols = 2, .min_subsequences = 4, .max_subsequences = 4, .keep = 1,
                             .min_keep_length = 1, .max_keep_length = 2, .min_discard_length = 1,
                             .max_discard_length = 2, .batch = 2, .keep_first = false};
  KeepDiscardTask task(o);
  std::set<std::size_t> where;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    Rng rng(seed);
    const Layout l = check_recalls(task.sample(rng), o);
    REQUIRE(std::count(l.keep.begin(), l.keep.end(), true) == 1);
    where.insert(std::size_t(std::find(l.keep.begin(), l.keep.end(), true) - l.keep.begin()));
  }
  CHECK(where == std::set<std::size_t>{0, 1, 2, 3});
}

TEST_CASE("keep_discard: the defaults fit the keep frames and one discard in 16 slots, but not all the frames",
          "[tasks][keep_discard]") {
  const KeepDiscardOptions d;
  const std::int64_t slots = 16;  // DeepMind's DNC (spec/dnc.md §9)
  CHECK(d.keep * d.max_keep_length + d.max_discard_length <= slots);
  CHECK(d.keep * d.min_keep_length + (d.min_subsequences - d.keep) * d.min_discard_length > slots);
  CHECK(d.min_discard_length >= 6);  // more than the 2×15×15 MatRNN holds (models/results/dnc.md)
  CHECK(d.keep_first);
  // The config's defaults are the task's.
  Config c;
  c.set("task", "keep_discard", "test");
  const auto made = make_task(c);
  const KeepDiscardOptions& m = dynamic_cast<const KeepDiscardTask&>(*made).options();
  CHECK(m.min_subsequences == d.min_subsequences);
  CHECK(m.max_subsequences == d.max_subsequences);
  CHECK(m.keep == d.keep);
  CHECK(m.keep_first == d.keep_first);
  CHECK(m.min_keep_length == d.min_keep_length);
  CHECK(m.max_keep_length == d.max_keep_length);
  CHECK(m.min_discard_length == d.min_discard_length);
  CHECK(m.max_discard_length == d.max_discard_length);
  // And every drawn batch meets the relations.
  const KeepDiscardOptions o = {.rows = 2, .cols = 2, .batch = 1};  // the defaults' counts and lengths
  KeepDiscardTask task(o);
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    Rng rng(seed);
    const Layout l = check_recalls(task.sample(rng), o);
    std::int64_t all = 0, keep = 0, longest_discard = 0;
    for (std::size_t j = 0; j < l.frames.size(); ++j) {
      const std::int64_t n = std::int64_t(l.frames[j].size());
      all += n;
      if (l.keep[j]) {
        keep += n;
      } else {
        longest_discard = std::max(longest_discard, n);
        CHECK(n >= 6);
      }
    }
    CHECK(keep + longest_discard <= slots);
    CHECK(all > slots);
    CHECK(std::int64_t(l.frames.size()) <= d.max_subsequences);
  }
}

TEST_CASE("keep_discard: a seed gives one batch, another seed another", "[tasks][keep_discard]") {
  KeepDiscardTask task({.batch = 4});
  auto same = [](const Sequence& a, const Sequence& b) {
    if (a.inputs.size() != b.inputs.size() || a.targets.size() != b.targets.size()) return false;
    for (std::size_t t = 0; t < a.inputs.size(); ++t)
      for (std::int64_t e = 0; e < a.inputs[t].numel(); ++e)
        if (a.inputs[t].get(e) != b.inputs[t].get(e)) return false;
    for (std::size_t k = 0; k < a.targets.size(); ++k)
      for (std::int64_t e = 0; e < a.targets[k].numel(); ++e)
        if (a.targets[k].get(e) != b.targets[k].get(e)) return false;
    return a.target_steps == b.target_steps;
  };
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Rng a(seed), b(seed), other(seed + 1000);
    const Sequence x = task.sample(a);
    Sequence reused = task.sample(other);  // drawn into again: the buffers are reused
    const Sequence y = task.sample(other);
    task.sample_into(b, reused);
    CHECK(same(x, reused));
    CHECK_FALSE(same(x, y));
  }
}

TEST_CASE("keep_discard: the size is the number of sub-sequences", "[tasks][keep_discard]") {
  KeepDiscardTask task({.rows = 2, .cols = 2, .batch = 2});
  CHECK(std::string(task.size_name()) == "subsequences");
  CHECK(task.size_range() == std::pair<std::int64_t, std::int64_t>{5, 7});
  Rng rng(3);
  for (std::int64_t n : task.eval_sizes()) {
    const Layout l = check_recalls(task.sample_size(rng, n), task.options());
    CHECK(std::int64_t(l.frames.size()) == n);
    CHECK(std::count(l.keep.begin(), l.keep.end(), true) == 2);
  }
  const Layout one = check_recalls(task.sample_size(rng, 1), task.options());  // fewer than task.keep: all keep
  CHECK(one.keep == std::vector<bool>{true});
  CHECK_THROWS_AS(task.sample_size(rng, 0), Error);
}

TEST_CASE("keep_discard: the cost is the scored bits that are wrong, per sequence", "[tasks][keep_discard]") {
  // The Unroller's cost for TargetKind::bits: Σ over the target steps of bit_errors_per_sequence.
  KeepDiscardTask task({.rows = 2, .cols = 2, .batch = 2});
  Rng rng(11);
  const Sequence s = task.sample(rng);
  std::vector<Tensor> logits;
  for (const Tensor& t : s.targets) {
    Tensor y(DType::f32, t.shape());
    for (std::int64_t e = 0; e < t.numel(); ++e) y.set(e, t.get(e) > 0.5 ? 3.0 : -3.0);
    logits.push_back(std::move(y));
  }
  auto cost = [&] {
    double bits = 0;
    for (std::size_t k = 0; k < s.targets.size(); ++k) bits += bit_errors_per_sequence(logits[k], s.targets[k]);
    return bits;
  };
  CHECK(cost() == 0.0);
  // Flip k = 5 bits of each of the two sequences, in different target frames (the first, a middle one, the last).
  const std::size_t K = s.targets.size();
  const std::vector<std::pair<std::size_t, std::int64_t>> flips = {{0, 0}, {0, 3}, {K / 2, 1}, {K - 1, 2}, {K - 1, 3}};
  for (const auto& [k, element] : flips)
    for (std::int64_t b = 0; b < 2; ++b) {
      const std::int64_t e = logits[k].shape().offset(b, 0, element / 2, element % 2);
      logits[k].set(e, -logits[k].get(e));
    }
  CHECK(cost() == 5.0);
}

TEST_CASE("keep_discard: impossible settings are refused, naming the key and its value", "[tasks][keep_discard][errors]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(KeepDiscardTask({.min_subsequences = 3, .max_subsequences = 5, .keep = 4}),
                    Contains("task.keep = 4") && Contains("task.min_subsequences = 3"));
  CHECK_THROWS_WITH(KeepDiscardTask({.keep = 0}), Contains("task.keep = 0"));
  CHECK_THROWS_WITH(KeepDiscardTask({.min_subsequences = 0}), Contains("task.min_subsequences = 0"));
  CHECK_THROWS_WITH(KeepDiscardTask({.min_subsequences = 6, .max_subsequences = 5}), Contains("task.max_subsequences = 5"));
  CHECK_THROWS_WITH(KeepDiscardTask({.min_keep_length = 0}), Contains("task.min_keep_length = 0"));
  CHECK_THROWS_WITH(KeepDiscardTask({.min_keep_length = 5, .max_keep_length = 4}),
                    Contains("task.max_keep_length = 4") && Contains("task.min_keep_length = 5"));
  CHECK_THROWS_WITH(KeepDiscardTask({.min_discard_length = 0}), Contains("task.min_discard_length = 0"));
  CHECK_THROWS_WITH(KeepDiscardTask({.min_discard_length = 9, .max_discard_length = 8}),
                    Contains("task.max_discard_length = 8") && Contains("task.min_discard_length = 9"));
  CHECK_THROWS_WITH(KeepDiscardTask({.rows = 0}), Contains("task.rows = 0"));
  CHECK_THROWS_WITH(KeepDiscardTask({.batch = 0}), Contains("batch = 0"));
  // Through the config, as `matmem train --set` gives them.
  Config c;
  c.set("task", "keep_discard", "test");
  c.set("task.keep", "9", "--set");
  CHECK_THROWS_WITH(make_task(c), Contains("task.keep = 9"));
  // write() takes as many flags as sub-sequences.
  KeepDiscardTask task({.rows = 2, .cols = 2, .batch = 1});
  Sequence s;
  CHECK_THROWS_AS(task.write({{matrix({1, 0, 0, 1})}}, {true, false}, s), Error);
  CHECK_THROWS_AS(task.write({{matrix({1, 0, 0, 1})}, {}}, {true, false}, s), Error);
}
