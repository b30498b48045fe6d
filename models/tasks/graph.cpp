#include "matmem/models/tasks/graph.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
void shuffle(Rng& rng, std::vector<std::int64_t>& v) {
  for (std::size_t k = v.size(); k > 1; --k) std::swap(v[k - 1], v[rng.uniform_int(std::uint64_t(k))]);
}
std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = i;
  return v;
}
void refuse(bool bad, const std::string& what) {
  if (bad) throw Error("config: task.graph." + what);  // the options are the task.graph.* keys
}
}  // namespace

double CitationGraph::homophily() const {
  if (edges.empty()) return 0.0;
  std::int64_t in = 0;
  for (const auto& [i, j] : edges) in += label[std::size_t(i)] == label[std::size_t(j)];
  return double(in) / double(edges.size());
}

CitationGraph make_citation_graph(const CitationGraphOptions& o) {
  refuse(o.classes < 2 || o.classes > 1000, fmt::format("classes = {}: choose 2 to 1000", o.classes));
  refuse(o.nodes < 2 * o.classes || o.nodes > 1000000,
         fmt::format("nodes = {}: choose 2·classes ({}) to 1000000", o.nodes, 2 * o.classes));
  refuse(!(o.homophily >= 0 && o.homophily <= 1), fmt::format("homophily = {}: choose 0 to 1", o.homophily));
  refuse(!(o.degree >= 0 && o.degree <= 0.5 * double(o.nodes - 1)),
         fmt::format("degree = {}: choose 0 to half of nodes − 1 ({})", o.degree, 0.5 * double(o.nodes - 1)));
  refuse(o.words < 1 || o.words > 1000000, fmt::format("words = {}: choose 1 to 1000000", o.words));
  refuse(o.topic_words < 1 || o.topic_words > o.words,
         fmt::format("topic_words = {}: choose 1 to words ({})", o.topic_words, o.words));
  refuse(o.words_per_node < 1 || o.words_per_node > o.words,
         fmt::format("words_per_node = {}: choose 1 to words ({})", o.words_per_node, o.words));
  refuse(!(o.feature_signal >= 0 && o.feature_signal <= 1),
         fmt::format("feature_signal = {}: choose 0 to 1", o.feature_signal));
  refuse(o.test < 1 || o.validation < 1 || o.test + o.validation >= o.nodes,
         fmt::format("test = {}, validation = {}: each at least 1, leaving training nodes of {}", o.test, o.validation,
                     o.nodes));
  Rng root(o.seed);
  Rng class_rng = root.split(1), edge_rng = root.split(2), word_rng = root.split(3), split_rng = root.split(4);
  CitationGraph g;
  g.nodes = o.nodes, g.classes = o.classes, g.words = o.words;
  // Classes.
  std::vector<std::int64_t> order = iota(o.nodes);
  shuffle(class_rng, order);
  g.label.assign(std::size_t(o.nodes), 0);
  std::vector<std::vector<std::int64_t>> members(std::size_t(o.classes));
  for (std::int64_t k = 0; k < o.nodes; ++k) g.label[std::size_t(order[std::size_t(k)])] = k % o.classes;
  for (std::int64_t i = 0; i < o.nodes; ++i) members[std::size_t(g.label[std::size_t(i)])].push_back(i);
  // Edges.
  const auto m = std::int64_t(std::llround(double(o.nodes) * o.degree / 2));
  const auto m_in = std::int64_t(std::llround(o.homophily * double(m)));
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  std::int64_t have_in = 0, have_out = 0;
  auto add = [&](std::int64_t i, std::int64_t j) {
    if (i == j) return false;
    const auto e = std::minmax(i, j);
    if (!seen.insert({e.first, e.second}).second) return false;
    g.edges.push_back({e.first, e.second});
    (g.label[std::size_t(i)] == g.label[std::size_t(j)] ? have_in : have_out)++;
    return true;
  };
  auto within = [&](std::int64_t i) {
    const auto& c = members[std::size_t(g.label[std::size_t(i)])];
    return c[edge_rng.uniform_int(std::uint64_t(c.size()))];
  };
  auto between = [&](std::int64_t i) {
    for (;;) {
      const auto j = std::int64_t(edge_rng.uniform_int(std::uint64_t(o.nodes)));
      if (g.label[std::size_t(j)] != g.label[std::size_t(i)]) return j;
    }
  };
  std::vector<double> pair_share(std::size_t(o.classes));
  double pairs = 0;
  for (std::size_t c = 0; c < members.size(); ++c) pairs += pair_share[c] = double(members[c].size()) * double(members[c].size() - 1);
  // At most half of the pairs of each kind become edges, so that drawing pairs until both counts are met ends
  // soon (pairs counts ordered pairs).
  const double between_pairs = double(o.nodes) * double(o.nodes - 1) - pairs;
  refuse(double(m_in) > 0.25 * pairs || double(m - m_in) > 0.25 * between_pairs,
         fmt::format("degree = {} with homophily = {}: more than half of the within-class ({}) or between-class ({}) "
                     "pairs would be edges",
                     o.degree, o.homophily, std::int64_t(pairs / 2), std::int64_t(between_pairs / 2)));
  std::vector<char> touched(std::size_t(o.nodes), 0);
  if (m >= o.nodes)  // one edge for every node first: none isolated
    for (std::int64_t i = 0; i < o.nodes; ++i) {
      if (touched[std::size_t(i)]) continue;
      for (int tries = 0; tries < 100; ++tries) {
        const bool in = edge_rng.uniform() < o.homophily ? have_in < m_in : have_out >= m - m_in;
        const std::int64_t j = in ? within(i) : between(i);
        if (add(i, j)) {
          touched[std::size_t(i)] = touched[std::size_t(j)] = 1;
          break;
        }
      }
    }
  // The rest: within-class pairs, a class drawn by its share of the within-class pairs, then between-class pairs.
  while (have_in < m_in) {
    double u = edge_rng.uniform() * pairs;
    std::size_t c = 0;
    while (c + 1 < members.size() && u >= pair_share[c]) u -= pair_share[c++];
    const auto& mc = members[c];
    add(mc[edge_rng.uniform_int(std::uint64_t(mc.size()))], mc[edge_rng.uniform_int(std::uint64_t(mc.size()))]);
  }
  while (have_out < m - m_in) {
    const auto i = std::int64_t(edge_rng.uniform_int(std::uint64_t(o.nodes)));
    add(i, between(i));
  }
  std::sort(g.edges.begin(), g.edges.end());
  // Neighbour lists (CSR), both directions, sorted.
  std::vector<std::vector<std::int64_t>> adj(std::size_t(o.nodes));
  for (const auto& [i, j] : g.edges) adj[std::size_t(i)].push_back(j), adj[std::size_t(j)].push_back(i);
  for (auto& a : adj) {
    std::sort(a.begin(), a.end());
    g.neighbours.index.insert(g.neighbours.index.end(), a.begin(), a.end());
    g.neighbours.offsets.push_back(std::int64_t(g.neighbours.index.size()));
  }
  // Features: class topics, Zipf background.
  std::vector<std::int64_t> rank = iota(o.words);
  shuffle(word_rng, rank);
  std::vector<double> cumulative(std::size_t(o.words));
  double total = 0;
  for (std::int64_t w = 0; w < o.words; ++w) cumulative[std::size_t(w)] = total += 1.0 / double(rank[std::size_t(w)] + 1);
  std::vector<std::vector<std::int64_t>> topic(std::size_t(o.classes));
  for (auto& t : topic) {
    std::vector<std::int64_t> w = iota(o.words);
    for (std::int64_t k = 0; k < o.topic_words; ++k)
      std::swap(w[std::size_t(k)], w[std::size_t(k) + word_rng.uniform_int(std::uint64_t(o.words - k))]);
    t.assign(w.begin(), w.begin() + o.topic_words);
  }
  g.features.resize(std::size_t(o.nodes));
  for (std::int64_t i = 0; i < o.nodes; ++i) {
    auto& f = g.features[std::size_t(i)];
    const auto& t = topic[std::size_t(g.label[std::size_t(i)])];
    for (std::int64_t k = 0; k < o.words_per_node; ++k) {
      std::int64_t w;
      if (word_rng.uniform() < o.feature_signal) {
        w = t[word_rng.uniform_int(std::uint64_t(t.size()))];
      } else {
        const double u = word_rng.uniform() * total;
        w = std::int64_t(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
        w = std::min(w, o.words - 1);
      }
      f.push_back(std::int32_t(w));
    }
    std::sort(f.begin(), f.end());
    f.erase(std::unique(f.begin(), f.end()), f.end());
  }
  // Splits.
  std::vector<std::int64_t> s = iota(o.nodes);
  shuffle(split_rng, s);
  g.test.assign(s.begin(), s.begin() + o.test);
  g.validation.assign(s.begin() + o.test, s.begin() + o.test + o.validation);
  g.train.assign(s.begin() + o.test + o.validation, s.end());
  for (auto* v : {&g.test, &g.validation, &g.train}) std::sort(v->begin(), v->end());
  return g;
}

// --- GraphTask -------------------------------------------------------------------------------------------------
GraphTask::GraphTask(GraphTaskOptions o) : o_(o), graph_(make_citation_graph(o.graph)) {
  refuse(o_.feature_rows < 1 || o_.feature_rows > o_.graph.words,
         fmt::format("feature_rows = {}: choose 1 to the words ({})", o_.feature_rows, o_.graph.words));
  refuse(o_.sample < 0, fmt::format("sample = {}: choose 0 (every neighbour) or more", o_.sample));
  feature_cols_ = (o_.graph.words + o_.feature_rows - 1) / o_.feature_rows;
  full_ = std::make_shared<const Neighbours>(graph_.neighbours);
}

const char* GraphTask::split_name(std::int64_t split) {
  switch (split) {
    case kTrain: return "train";
    case kValidation: return "validation";
    case kTest: return "test";
  }
  return "?";
}

std::int64_t GraphTask::split_size(Split s) const {
  const auto& nodes = s == Split::train ? graph_.train : s == Split::validation ? graph_.validation : graph_.test;
  return std::int64_t(nodes.size());
}

void GraphTask::split_batch_into(Split s, std::int64_t first, std::int64_t count, Sequence& out, DType dtype) const {
  if (first != 0 || count != split_size(s))
    throw Error(fmt::format("graph: the {} part is read whole ({} nodes), not nodes {}..{}", matmem::split_name(s),
                            split_size(s), first, first + count - 1));
  Rng unused(0);  // a held-out read draws nothing
  sample_size_into(unused, s == Split::train ? kTrain : s == Split::validation ? kValidation : kTest, out, dtype);
}

void GraphTask::fill(std::int64_t split, Sequence& out, DType dtype) const {
  if (split < kTrain || split > kTest)
    throw Error(fmt::format("graph: split {}: choose 1 (train), 2 (validation) or 3 (test)", split));
  out.reset();
  out.kind = TargetKind::classes;
  const std::int64_t N = graph_.nodes, C = feature_cols_;
  Tensor& x = out.add_input(dtype, matrices(N, o_.feature_rows, C));
  Tensor& t = out.add_target(dtype, matrices(N, 1, graph_.classes), 0);
  dispatch(dtype, [&](auto z) {
    using T = decltype(z);
    const TensorView<T> xv = x.view<T>(), tv = t.view<T>();
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int32_t w : graph_.features[std::size_t(i)]) xv.at(i, w / C, w % C) = T(1);
    const auto& nodes = split == kTrain ? graph_.train : split == kValidation ? graph_.validation : graph_.test;
    for (std::int64_t i : nodes) tv.at(i, 0, graph_.label[std::size_t(i)]) = T(1);
  });
}

void GraphTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  fill(kTrain, out, dtype);
  const Neighbours& full = *full_;
  if (o_.sample == 0 || full.max_degree() <= o_.sample) {
    out.graph = full_;
    return;
  }
  auto g = std::make_shared<Neighbours>();
  std::vector<std::int64_t> pick;
  for (std::int64_t i = 0; i < full.nodes(); ++i) {
    pick.assign(full.index.begin() + full.offsets[std::size_t(i)], full.index.begin() + full.offsets[std::size_t(i) + 1]);
    const std::int64_t keep = std::min<std::int64_t>(o_.sample, std::int64_t(pick.size()));
    for (std::int64_t k = 0; k < keep; ++k)  // a partial Fisher–Yates shuffle: `keep` without replacement
      std::swap(pick[std::size_t(k)], pick[std::size_t(k) + rng.uniform_int(std::uint64_t(pick.size()) - std::uint64_t(k))]);
    g->index.insert(g->index.end(), pick.begin(), pick.begin() + keep);
    g->offsets.push_back(std::int64_t(g->index.size()));
  }
  out.graph = std::move(g);
}

void GraphTask::sample_size_into(Rng&, std::int64_t split, Sequence& out, DType dtype) const {
  fill(split, out, dtype);
  out.graph = full_;
}

}  // namespace matmem
