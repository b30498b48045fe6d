#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "matmem/models/core/model.hpp"
#include "matmem/models/tasks/graph.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// Checks the generated graph against what was asked, within the stated tolerances: the edge count is
// round(n·d/2) exactly, so the mean degree is within 1/n of d; the within-class edges are round(h·m), so
// the homophily is within 1/m of h; classes have ⌊n/K⌋ or ⌈n/K⌉ nodes.
void check_statistics(const CitationGraphOptions& o, const CitationGraph& g) {
  INFO("nodes " << o.nodes << ", classes " << o.classes << ", degree " << o.degree << ", homophily " << o.homophily);
  CHECK(std::abs(g.mean_degree() - o.degree) <= 1.0 / double(o.nodes) + 1e-12);
  CHECK(std::abs(g.homophily() - o.homophily) <= 1.0 / double(g.edges.size()) + 1e-12);
  std::vector<std::int64_t> size(std::size_t(o.classes), 0);
  for (std::int64_t c : g.label) ++size[std::size_t(c)];
  for (std::int64_t s : size) {
    CHECK(s >= o.nodes / o.classes);
    CHECK(s <= (o.nodes + o.classes - 1) / o.classes);
  }
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  for (const auto& [i, j] : g.edges) {
    CHECK(i < j);  // no self-loop, stored once
    CHECK(seen.insert({i, j}).second);
  }
  g.neighbours.check();
  CHECK(g.neighbours.index.size() == 2 * g.edges.size());
  if (2 * std::int64_t(g.edges.size()) >= 2 * o.nodes)
    for (std::int64_t i = 0; i < o.nodes; ++i) CHECK(g.neighbours.degree(i) >= 1);  // none isolated
  CHECK(std::int64_t(g.test.size()) == o.test);
  CHECK(std::int64_t(g.validation.size()) == o.validation);
  CHECK(std::int64_t(g.train.size()) == o.nodes - o.test - o.validation);
  std::set<std::int64_t> all(g.train.begin(), g.train.end());
  all.insert(g.validation.begin(), g.validation.end());
  all.insert(g.test.begin(), g.test.end());
  CHECK(std::int64_t(all.size()) == o.nodes);  // disjoint, covering
}

// Naive Bayes on the training nodes' words, accuracy on the test nodes: the features carry the class.
double naive_bayes_accuracy(const CitationGraph& g) {
  std::vector<std::vector<double>> count(std::size_t(g.classes), std::vector<double>(std::size_t(g.words), 1.0));
  std::vector<double> total(std::size_t(g.classes), double(g.words));
  for (std::int64_t i : g.train)
    for (std::int32_t w : g.features[std::size_t(i)]) {
      count[std::size_t(g.label[std::size_t(i)])][std::size_t(w)] += 1;
      total[std::size_t(g.label[std::size_t(i)])] += 1;
    }
  std::int64_t right = 0;
  for (std::int64_t i : g.test) {
    std::int64_t best = 0;
    double best_score = -1e300;
    for (std::int64_t c = 0; c < g.classes; ++c) {
      double s = 0;
      for (std::int32_t w : g.features[std::size_t(i)])
        s += std::log(count[std::size_t(c)][std::size_t(w)] / total[std::size_t(c)]);
      if (s > best_score) best_score = s, best = c;
    }
    right += best == g.label[std::size_t(i)];
  }
  return double(right) / double(g.test.size());
}
}  // namespace

TEST_CASE("graph: the Cora-like default has the degree, homophily, class sizes and splits asked for", "[tasks][graph]") {
  const CitationGraphOptions o;
  const CitationGraph g = make_citation_graph(o);
  CHECK(g.nodes == 2708);
  CHECK(g.edges.size() == 5416);  // round(2708 · 4 / 2)
  check_statistics(o, g);
  // Features: at most words_per_node distinct words a node, from the vocabulary.
  double words = 0;
  for (const auto& f : g.features) {
    CHECK(!f.empty());
    CHECK(std::int64_t(f.size()) <= o.words_per_node);
    for (std::int32_t w : f) CHECK((w >= 0 && w < o.words));
    words += double(f.size());
  }
  CHECK(words / double(g.nodes) > 0.8 * double(o.words_per_node));
}

TEST_CASE("graph: other class counts, degrees and homophilies are met too", "[tasks][graph]") {
  for (const auto& [classes, nodes, degree, homophily] :
       std::vector<std::tuple<std::int64_t, std::int64_t, double, double>>{
           {3, 600, 6.0, 0.3}, {10, 1000, 2.5, 0.95}, {2, 200, 1.0, 0.5}, {5, 500, 8.0, 0.0}, {4, 400, 3.0, 1.0}}) {
    CitationGraphOptions o;
    o.classes = classes, o.nodes = nodes, o.degree = degree, o.homophily = homophily, o.test = 100, o.validation = 50;
    o.seed = 3;
    check_statistics(o, make_citation_graph(o));
  }
}

TEST_CASE("graph: the same seed gives the same graph, another seed another", "[tasks][graph]") {
  CitationGraphOptions o;
  o.nodes = 500, o.classes = 5, o.test = 100, o.validation = 50;
  const CitationGraph a = make_citation_graph(o), b = make_citation_graph(o);
  CHECK(a.edges == b.edges);
  CHECK(a.label == b.label);
  CHECK(a.features == b.features);
  CHECK(a.test == b.test);
  o.seed = 2;
  const CitationGraph c = make_citation_graph(o);
  CHECK(a.edges != c.edges);
  CHECK(a.label != c.label);
}

TEST_CASE("graph: the features carry the class, and carry none without the class topics", "[tasks][graph]") {
  CitationGraphOptions o;
  o.nodes = 1400, o.test = 400, o.validation = 100;
  const double with_topics = naive_bayes_accuracy(make_citation_graph(o));
  o.feature_signal = 0.0;
  const double without = naive_bayes_accuracy(make_citation_graph(o));
  INFO("naive Bayes test accuracy " << with_topics << " with class topics, " << without << " without; 7 classes");
  CHECK(with_topics > 0.5);
  CHECK(without < 0.25);
}

TEST_CASE("graph: options out of range are refused naming the key", "[tasks][graph]") {
  CitationGraphOptions o;
  o.homophily = 1.5;
  CHECK_THROWS_WITH(make_citation_graph(o), Contains("task.graph.homophily") && Contains("1.5"));
  o = {};
  o.classes = 1;
  CHECK_THROWS_WITH(make_citation_graph(o), Contains("task.graph.classes"));
  o = {};
  o.test = 2000, o.validation = 708;
  CHECK_THROWS_WITH(make_citation_graph(o), Contains("task.graph.test"));
  o = {};
  o.degree = 1000;
  CHECK_THROWS_WITH(make_citation_graph(o), Contains("task.graph.degree"));
}

TEST_CASE("graph task: one frame of features, targets on the split's nodes only, sampled neighbours", "[tasks][graph]") {
  GraphTaskOptions o;
  o.graph.nodes = 300, o.graph.classes = 3, o.graph.degree = 8, o.graph.test = 100, o.graph.validation = 20;
  o.graph.words = 50, o.graph.words_per_node = 5, o.graph.topic_words = 10;
  o.feature_rows = 4;  // 50 words as 4 × 13, zero-padded
  o.sample = 3;
  GraphTask task(o);
  const CitationGraph& g = task.graph();
  CHECK(task.batch() == 300);
  CHECK(task.input_rows() == 4);
  CHECK(task.input_cols() == 13);
  CHECK(task.output_cols() == 3);
  Rng rng(5);
  const Sequence s = task.sample(rng, DType::f64);
  REQUIRE(s.inputs.size() == 1);
  REQUIRE(s.targets.size() == 1);
  CHECK(s.target_steps[0] == 0);
  CHECK(s.kind == TargetKind::classes);
  // Features: word w at row w / 13, column w % 13.
  for (std::int64_t i = 0; i < 300; ++i) {
    std::int64_t ones = 0;
    for (std::int64_t r = 0; r < 4; ++r)
      for (std::int64_t c = 0; c < 13; ++c) ones += s.inputs[0].at(i, r, c) == 1.0;
    CHECK(ones == std::int64_t(g.features[std::size_t(i)].size()));
    for (std::int32_t w : g.features[std::size_t(i)]) CHECK(s.inputs[0].at(i, w / 13, w % 13) == 1.0);
  }
  auto labelled = [](const Sequence& q, std::int64_t i) {
    double sum = 0;
    for (std::int64_t c = 0; c < 3; ++c) sum += q.targets[0].at(i, 0, c);
    return sum;
  };
  const std::set<std::int64_t> train(g.train.begin(), g.train.end());
  for (std::int64_t i = 0; i < 300; ++i) {
    CHECK(labelled(s, i) == (train.count(i) ? 1.0 : 0.0));
    if (train.count(i)) CHECK(s.targets[0].at(i, 0, g.label[std::size_t(i)]) == 1.0);
  }
  // Training reads at most 3 of each node's neighbours, distinct, all of them real neighbours.
  REQUIRE(s.graph);
  s.graph->check();
  for (std::int64_t i = 0; i < 300; ++i) {
    const std::int64_t full = g.neighbours.degree(i);
    CHECK(s.graph->degree(i) == std::min<std::int64_t>(3, full));
    const std::set<std::int64_t> real(g.neighbours.index.begin() + g.neighbours.offsets[std::size_t(i)],
                                      g.neighbours.index.begin() + g.neighbours.offsets[std::size_t(i) + 1]);
    std::set<std::int64_t> got;
    for (std::int64_t e = s.graph->offsets[std::size_t(i)]; e < s.graph->offsets[std::size_t(i) + 1]; ++e) {
      CHECK(real.count(s.graph->index[std::size_t(e)]) == 1);
      got.insert(s.graph->index[std::size_t(e)]);
    }
    CHECK(std::int64_t(got.size()) == s.graph->degree(i));
  }
  // The evaluation splits read every neighbour and label only their nodes.
  Sequence t = task.sample_size(rng, GraphTask::kTest, DType::f64);
  CHECK(t.graph->index == g.neighbours.index);
  double test_rows = 0;
  for (std::int64_t i = 0; i < 300; ++i) test_rows += labelled(t, i);
  CHECK(test_rows == 100.0);
  CHECK_THROWS_WITH(task.sample_size(rng, 4), Contains("split 4"));
}

TEST_CASE("classes: a zero target row carries no loss and no error", "[tasks][graph]") {
  // 3 lanes, one class row each; lane 1 unlabelled. Logits put lane 0 right and lane 2 wrong.
  Tensor logits(DType::f64, matrices(3, 1, 2)), target(DType::f64, matrices(3, 1, 2));
  auto put = [](Tensor& x, std::int64_t b, std::int64_t j, double v) { x.set(x.shape().offset(b, 0, 0, j), v); };
  put(logits, 0, 0, 2), put(logits, 1, 1, 5), put(logits, 2, 0, 1);
  put(target, 0, 0, 1), put(target, 2, 1, 1);
  CHECK(class_errors_per_sequence(logits, target) == Approx(0.5));  // 1 wrong of the 2 labelled lanes
  struct Echo : Model {
    Echo() : Model("echo", DType::f64, 1) { set_io(1, 2, 1, 2); }
    void step(Step& s) override { s.output(s.input()); }
  } echo;
  Sequence seq;
  seq.kind = TargetKind::classes;
  seq.inputs.push_back(logits);
  seq.targets.push_back(target);
  seq.target_steps.push_back(0);
  Tape tape(DType::f64);
  Unroller u(echo, tape);
  const SequenceResult& r = u.run(seq);
  // Mean cross-entropy over the labelled lanes 0 and 2 only.
  const double l0 = -std::log(std::exp(2.0) / (std::exp(2.0) + 1.0)), l2 = -std::log(1.0 / (std::exp(1.0) + 1.0));
  CHECK(r.loss.item() == Approx((l0 + l2) / 2).epsilon(1e-12));
  CHECK(r.bits == Approx(0.5));
}
