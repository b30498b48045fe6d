#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "matmem/models/core/model.hpp"
#include "matmem/models/tasks/tasks.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;

TEST_CASE("copy task: frames, delimiter and targets as the spec lays them out", "[tasks]") {
  CopyTask task({.rows = 5, .cols = 5, .min_length = 1, .max_length = 20, .batch = 3});
  Rng rng(3);
  Sequence s = task.sample_size(rng, 4);
  REQUIRE(s.inputs.size() == 9);  // 2l + 1
  REQUIRE(s.targets.size() == 4);
  CHECK(s.target_steps == std::vector<std::int64_t>{5, 6, 7, 8});
  for (const Tensor& f : s.inputs) CHECK(f.shape() == matrices(3, 6, 5));
  for (std::int64_t b = 0; b < 3; ++b)
    for (std::int64_t j = 0; j < 5; ++j) {
      CHECK(s.inputs[4].at(b, 5, j) == 1.0);  // the delimiter row at step l+1
      CHECK(s.inputs[4].at(b, 0, j) == 0.0);
      CHECK(s.inputs[0].at(b, 5, j) == 0.0);
      for (std::int64_t i = 0; i < 5; ++i) {
        CHECK(s.targets[2].at(b, i, j) == s.inputs[2].at(b, i, j));  // target t is input t
        CHECK(s.inputs[6].at(b, i, j) == 0.0);                     // blank recall frames
      }
    }
}

TEST_CASE("copy task: lengths are drawn over the whole range from the seed", "[tasks]") {
  CopyTask task({.rows = 2, .cols = 3, .min_length = 1, .max_length = 5, .batch = 1});
  Rng a(9), b(9);
  std::vector<bool> seen(6, false);
  for (int k = 0; k < 200; ++k) {
    Sequence s = task.sample(a);
    Sequence t = task.sample(b);
    CHECK(s.targets.size() == t.targets.size());
    seen[s.targets.size()] = true;
  }
  for (int l = 1; l <= 5; ++l) CHECK(seen[l]);
}

TEST_CASE("associative recall: the query's successor is the target", "[tasks]") {
  RecallTask task({.rows = 5, .cols = 5, .item_matrices = 2, .min_items = 2, .max_items = 10, .batch = 2});
  Rng rng(11);
  Sequence s = task.sample_size(rng, 4);
  REQUIRE(s.inputs.size() == 4 * 3 + 2 + 2 + 2);
  REQUIRE(s.targets.size() == 2);
  CHECK(s.target_steps == std::vector<std::int64_t>{16, 17});
  CHECK(s.inputs[12].at(0, 6, 0) == 1.0);  // query delimiter row
  CHECK(s.inputs[0].at(0, 5, 0) == 1.0);   // item delimiter row
  // Find the queried item by its first matrix, then check the target is the next item.
  int found = -1;
  for (int it = 0; it < 3; ++it) {
    bool same = true;
    for (std::int64_t i = 0; i < 5; ++i)
      for (std::int64_t j = 0; j < 5; ++j) same = same && s.inputs[it * 3 + 1].at(0, i, j) == s.inputs[13].at(0, i, j);
    if (same) found = it;
  }
  REQUIRE(found >= 0);
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 5; ++j) CHECK(s.targets[0].at(0, i, j) == s.inputs[(found + 1) * 3 + 1].at(0, i, j));
}

TEST_CASE("bit errors count wrong bits per sequence", "[tasks]") {
  Tensor logits(DType::f32, matrices(2, 1, 2)), target(DType::f32, matrices(2, 1, 2));
  logits.set(0, 3.0);    // 1, right
  logits.set(1, -1.0);   // 0, wrong (target 1)
  logits.set(2, 2.0);    // 1, wrong (target 0)
  logits.set(3, -2.0);   // 0, right
  target.set(0, 1.0);
  target.set(1, 1.0);
  CHECK(bit_errors_per_sequence(logits, target) == 1.0);  // 2 wrong bits over a batch of 2
}

TEST_CASE("impossible task settings are refused with a message", "[tasks][errors]") {
  CHECK_THROWS_WITH(CopyTask({.min_length = 5, .max_length = 2}), Catch::Contains("min_length"));
  CHECK_THROWS_WITH(RecallTask({.min_items = 1}), Catch::Contains("min_items"));
}

TEST_CASE("a batch slice holds the chosen sequences' frames and targets at the same steps", "[tasks]") {
  for (const char* name : {"copy", "recall"}) {
    INFO(name);
    std::unique_ptr<Task> task;
    if (std::string(name) == "copy")
      task = std::make_unique<CopyTask>(CopyTaskOptions{.rows = 3, .cols = 4, .batch = 5});
    else
      task = std::make_unique<RecallTask>(RecallTaskOptions{.rows = 3, .cols = 4, .batch = 5});
    Rng rng(9);
    const Sequence whole = task->sample(rng);
    Sequence part;
    for (auto [first, count] : {std::pair<std::int64_t, std::int64_t>{0, 2}, {2, 3}, {4, 1}, {0, 5}}) {
      batch_slice(whole, first, count, part);  // again into the same Sequence: its buffers are reused
      REQUIRE(part.inputs.size() == whole.inputs.size());
      REQUIRE(part.targets.size() == whole.targets.size());
      CHECK(part.target_steps == whole.target_steps);
      auto same = [&](const Tensor& p, const Tensor& w) {
        REQUIRE(p.shape() == matrices(count, w.shape().rows, w.shape().cols));
        for (std::int64_t b = 0; b < count; ++b)
          for (std::int64_t i = 0; i < w.shape().rows; ++i)
            for (std::int64_t j = 0; j < w.shape().cols; ++j) REQUIRE(p.at(b, i, j) == w.at(first + b, i, j));
      };
      for (std::size_t t = 0; t < whole.inputs.size(); ++t) same(part.inputs[t], whole.inputs[t]);
      for (std::size_t t = 0; t < whole.targets.size(); ++t) same(part.targets[t], whole.targets[t]);
    }
  }
  Sequence part;
  Rng rng(1);
  const Sequence whole = CopyTask({.rows = 2, .cols = 2, .batch = 3}).sample(rng);
  CHECK_THROWS_WITH(batch_slice(whole, 2, 2, part), Catch::Matchers::Contains("sequences 2..3 of frames [3,3,2]"));
}

// --- associative recall, frame by frame (spec/models.md "Tasks", 000 §6.2, Graves et al.'s layout) --------
namespace {
struct RecallLayout {
  std::int64_t rows, cols, n;
};
bool same_matrix(const Tensor& x, const Tensor& y, std::int64_t b, std::int64_t rows) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < x.shape().cols; ++j)
      if (x.at(b, i, j) != y.at(b, i, j)) return false;
  return true;
}
// The items of sequence b whose n matrices equal the query's n matrices (the query frames start at step
// k(n+1)+1).
std::vector<std::int64_t> queried_items(const Sequence& s, std::int64_t k, std::int64_t n, std::int64_t rows,
                                        std::int64_t b) {
  std::vector<std::int64_t> found;
  for (std::int64_t it = 0; it < k; ++it) {
    bool same = true;
    for (std::int64_t m = 0; m < n; ++m)
      same = same && same_matrix(s.inputs[std::size_t(it * (n + 1) + 1 + m)],
                                 s.inputs[std::size_t(k * (n + 1) + 1 + m)], b, rows);
    if (same) found.push_back(it);
  }
  return found;
}
}  // namespace

TEST_CASE("associative recall: delimiter, item, query and blank frames are exactly as the spec lays them out", "[tasks]") {
  // The matrix task of Table 1 and Graves et al.'s vector task (items of three 6-bit vectors).
  for (const RecallLayout L : {RecallLayout{5, 5, 2}, RecallLayout{1, 6, 3}}) {
    const std::int64_t r = L.rows, c = L.cols, n = L.n, B = 3, k = 4;
    INFO(r << "x" << c << ", " << n << " matrices per item");
    RecallTask task({.rows = r, .cols = c, .item_matrices = n, .min_items = 2, .max_items = 6, .batch = B});
    Rng rng(5);
    const Sequence s = task.sample_size(rng, k);
    const std::int64_t query = k * (n + 1);  // the first query delimiter
    REQUIRE(std::int64_t(s.inputs.size()) == k * (n + 1) + n + 2 + n);
    REQUIRE(std::int64_t(s.targets.size()) == n);
    std::vector<std::int64_t> steps;
    for (std::int64_t m = 0; m < n; ++m) steps.push_back(query + n + 2 + m);  // the loss covers these and only these
    CHECK(s.target_steps == steps);
    for (const Tensor& t : s.targets) CHECK(t.shape() == matrices(B, r, c));
    for (std::int64_t t = 0; t < std::int64_t(s.inputs.size()); ++t) {
      INFO("step " << t);
      const Tensor& f = s.inputs[std::size_t(t)];
      REQUIRE(f.shape() == matrices(B, r + 2, c));
      const bool item_delimiter = t < query && t % (n + 1) == 0;
      const bool query_delimiter = t == query || t == query + n + 1;
      const bool blank = t > query + n + 1;
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0; j < c; ++j) {
          CHECK(f.at(b, r, j) == (item_delimiter ? 1.0 : 0.0));
          CHECK(f.at(b, r + 1, j) == (query_delimiter ? 1.0 : 0.0));
          for (std::int64_t i = 0; i < r; ++i) {
            const double x = f.at(b, i, j);
            if (item_delimiter || query_delimiter || blank) CHECK(x == 0.0);
            else CHECK((x == 0.0 || x == 1.0));
          }
        }
    }
  }
}

TEST_CASE("associative recall: each sequence queries its own item and is asked for the item after it", "[tasks]") {
  for (const RecallLayout L : {RecallLayout{5, 5, 2}, RecallLayout{1, 6, 3}}) {
    const std::int64_t r = L.rows, c = L.cols, n = L.n, B = 16, k = 6;
    INFO(r << "x" << c << ", " << n << " matrices per item");
    RecallTask task({.rows = r, .cols = c, .item_matrices = n, .min_items = 2, .max_items = 6, .batch = B});
    Rng rng(7);
    std::vector<int> queried(std::size_t(k), 0);
    int batches_with_several_queries = 0;
    Sequence s;
    for (int batch = 0; batch < 40; ++batch) {
      task.sample_size_into(rng, k, s);
      std::vector<bool> here(std::size_t(k), false);
      for (std::int64_t b = 0; b < B; ++b) {
        const std::vector<std::int64_t> found = queried_items(s, k, n, r, b);
        REQUIRE(!found.empty());  // the query is one of the items
        if (found.size() > 1) continue;  // two equal items (rare for 18 bits): which one was queried is unclear
        const std::int64_t q = found[0];
        REQUIRE(q < k - 1);  // never the last item: a following item exists
        ++queried[std::size_t(q)];
        here[std::size_t(q)] = true;
        for (std::int64_t m = 0; m < n; ++m)
          CHECK(same_matrix(s.targets[std::size_t(m)], s.inputs[std::size_t((q + 1) * (n + 1) + 1 + m)], b, r));
      }
      batches_with_several_queries += std::count(here.begin(), here.end(), true) > 1;
    }
    // One query per batch would give 0 here; independent draws give a single query per batch with
    // probability (1/5)^15 per batch.
    CHECK(batches_with_several_queries == 40);
    // Uniform over items 1..k−1: 640 draws, 128 expected each (σ ≈ 10).
    for (std::int64_t q = 0; q < k - 1; ++q) {
      INFO("item " << q + 1 << " queried " << queried[std::size_t(q)] << " times");
      CHECK(queried[std::size_t(q)] > 80);
      CHECK(queried[std::size_t(q)] < 176);
    }
    CHECK(queried[std::size_t(k - 1)] == 0);
  }
}

TEST_CASE("associative recall: the smallest task, two items, always asks for the second", "[tasks]") {
  RecallTask task({.rows = 2, .cols = 3, .item_matrices = 2, .min_items = 2, .max_items = 2, .batch = 5});
  Rng rng(2);
  const Sequence s = task.sample(rng);
  REQUIRE(s.inputs.size() == 2 * 3 + 2 + 2 + 2);
  for (std::int64_t b = 0; b < 5; ++b)
    for (std::int64_t m = 0; m < 2; ++m) {
      CHECK(same_matrix(s.inputs[std::size_t(7 + m)], s.inputs[std::size_t(1 + m)], b, 2));  // query: item 1
      CHECK(same_matrix(s.targets[std::size_t(m)], s.inputs[std::size_t(4 + m)], b, 2));     // target: item 2
    }
}

// --- the costs, counted by hand -----------------------------------------------------------------------------
namespace {
// Logits fixed by hand: mat() with U = V = 0 leaves its bias, set to `pattern` (one value per element of a
// matrix), negated on odd time steps, so that which frames are scored changes the counts.
class FixedLogits : public Model {
 public:
  FixedLogits(const Task& t) : Model("fixed", DType::f64, 1) {
    set_io(t.input_rows(), t.input_cols(), t.output_rows(), t.output_cols());
  }
  void step(Step& s) override {
    Var y = s.mat("fixed/out", {{"x", s.input()}}, output_rows(), output_cols());
    s.output(s.time() % 2 ? scale(y, -1.0) : y);
  }
};
double pattern(std::int64_t i, std::int64_t j) { return (i + 2 * j) % 3 == 0 ? 2.0 : -1.5 + 0.25 * double(j); }

struct Count {
  double bits = 0, loss = 0;
};
// Bits per sequence: wrong bits over every target frame, divided by the batch. Loss: the BCE averaged over
// every element of every target frame.
Count hand_count(const Sequence& s) {
  double wrong = 0, bce = 0, elements = 0;
  std::int64_t B = 1;
  for (std::size_t k = 0; k < s.targets.size(); ++k) {
    const Tensor& t = s.targets[k];
    B = t.shape().batch;
    const double sign = s.target_steps[k] % 2 ? -1.0 : 1.0;
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < t.shape().rows; ++i)
        for (std::int64_t j = 0; j < t.shape().cols; ++j) {
          const double x = sign * pattern(i, j), y = t.at(b, i, j);
          wrong += (x > 0) != (y > 0.5);
          bce += y == 1.0 ? std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
          elements += 1;
        }
  }
  return {wrong / double(B), bce / elements};
}
}  // namespace

TEST_CASE("copy and recall costs: bits per sequence and the loss match a count by hand", "[tasks]") {
  CopyTask copy({.rows = 2, .cols = 3, .min_length = 1, .max_length = 5, .batch = 4});
  RecallTask recall({.rows = 2, .cols = 3, .item_matrices = 2, .min_items = 2, .max_items = 5, .batch = 4});
  for (const Task* task : {static_cast<const Task*>(&copy), static_cast<const Task*>(&recall)}) {
    INFO(task->name());
    FixedLogits model(*task);
    model.build();
    for (Parameter* p : {&model.params().at("fixed/out/x/U"), &model.params().at("fixed/out/x/V")}) p->value.fill(0.0);
    Tensor& bias = model.params().at("fixed/out/B").value;
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j) bias.set(bias.shape().offset(0, 0, i, j), pattern(i, j));
    Tape tape(DType::f64);
    Unroller u(model, tape);
    Rng rng(4);
    for (std::int64_t size : {2, 3, 5}) {
      INFO("size " << size);
      const Sequence s = task->sample_size(rng, size, DType::f64);
      const Count want = hand_count(s);
      const SequenceResult& got = u.run(s);
      CHECK(got.bits == Approx(want.bits).margin(1e-12));
      CHECK(got.loss.item() == Approx(want.loss).epsilon(1e-12));
    }
  }
}

TEST_CASE("costs: a count small enough to write out", "[tasks]") {
  // One target frame of 1x2 for a batch of 2, targets (1,1) and (0,0); the logits are pattern(0,·) = (2, −1.25)
  // for both. Wrong: bit 2 of sequence 1 and bit 1 of sequence 2, 2 bits over 2 sequences. The loss is the
  // mean of softplus(−2), softplus(1.25), softplus(2), softplus(−1.25) (BCE against 1 is softplus(−x), against
  // 0 softplus(x)).
  CopyTask shape({.rows = 1, .cols = 2, .batch = 2});
  FixedLogits model(shape);
  model.build();
  for (Parameter* p : {&model.params().at("fixed/out/x/U"), &model.params().at("fixed/out/x/V")}) p->value.fill(0.0);
  Tensor& bias = model.params().at("fixed/out/B").value;
  bias.set(0, 2.0);
  bias.set(1, -1.25);
  Sequence one;
  one.inputs.push_back(Tensor(DType::f64, matrices(2, 2, 2)));
  Tensor target(DType::f64, matrices(2, 1, 2));
  target.set(target.shape().offset(0, 0, 0, 0), 1.0);
  target.set(target.shape().offset(0, 0, 0, 1), 1.0);
  one.targets.push_back(target);
  one.target_steps.push_back(0);
  Tape tape(DType::f64);
  Unroller u(model, tape);
  const SequenceResult& got = u.run(one);
  auto softplus = [](double x) { return std::log1p(std::exp(x)); };
  CHECK(got.bits == 1.0);
  const double bce = (softplus(-2.0) + softplus(1.25) + softplus(2.0) + softplus(-1.25)) / 4;
  CHECK(got.loss.item() == Approx(bce).epsilon(1e-12));
  CHECK(hand_count(one).bits == 1.0);
}

TEST_CASE("copy task: its bits are the Rng's bernoulli(0.5) draws, frame by frame in memory order", "[tasks]") {
  // Pins which numbers a seed gives: a change in how bits are drawn would change every run of a seed.
  CopyTask task({.rows = 5, .cols = 5, .min_length = 1, .max_length = 20, .batch = 3});
  Rng rng(11), reference(11);
  Sequence s;
  task.sample_size_into(rng, 4, s, DType::f32);
  REQUIRE(s.targets.size() == 4);
  for (const Tensor& y : s.targets)
    for (std::int64_t k = 0; k < y.numel(); ++k) REQUIRE(y.get(k) == (reference.bernoulli(0.5) ? 1.0 : 0.0));
  CHECK(rng.state() == reference.state());
}
