// A generated citation-like graph for node classification (001 §4.4, whose Cora, Citeseer and PubMed are not
// available here): a stochastic block model with bag-of-words features, and the task that trains on it.
//
// The graph (make_citation_graph, from its own seed):
//   Classes: node i is in class (its place in a seeded shuffle) mod K, so every class has ⌊n/K⌋ or ⌈n/K⌉ nodes.
//   Edges: m = round(n·degree/2) undirected edges, none repeated and no self-loops; of them
//     m_in = round(h·m) join two nodes of one class and m − m_in two of different classes (h = homophily, the
//     within-class share of the edges). A stochastic block model with one probability p_in within every class
//     and one p_out between classes, conditioned on those two counts. First every node gets one edge (within
//     its class with probability h, to a uniform partner there, else to a uniform node of another class), so
//     that no node is isolated (Cora's smallest degree is 1); then uniform within-class pairs (a class drawn
//     by its share of the within-class pairs) and uniform between-class pairs fill the two counts.
//   Features: a binary bag of W words. Each class has `topic_words` words of its own (drawn uniformly, topics
//     may overlap). A node draws `words_per_node` words with replacement, each from its class's topic with
//     probability `feature_signal` and otherwise from all W words with Zipf weights ∝ 1/(rank+1) (rank a
//     seeded shuffle of the words); the features are 1 for the words drawn. Defaults like Cora's (001 Table 2:
//     7 classes, 2,708 nodes, 5,429 edges, 1,433 words; about 18 words a paper).
//   Splits: a seeded shuffle of the nodes; the first `test` are the test set, the next `validation` the
//     validation set, the rest the training set (001 §4.4: 1,000 test and 100 validation nodes for Cora).
//
// The task (GraphTask): the whole graph is one batch, a lane per node, one time step. The input frame is each
// node's features as a feature_rows × ⌈W / feature_rows⌉ matrix (the words row-major, zero-padded; 1: the
// bag-of-words vector as the paper gives it). The target is a one-hot row of K classes for the nodes of the
// split drawn and a zero row for the others, which the loss and the cost skip (TargetKind::classes: a zero
// target row carries no loss, and the cost is the error rate over the labelled rows). Training draws the
// training split, with each node's neighbours sampled without replacement down to at most `sample` (001 §4.4:
// 50) from the data Rng. As a SplitTask, a part is a split, read whole with every neighbour (sizes 1 training,
// 2 validation, 3 test for sample_size_into). The sequence carries the neighbour lists (Sequence::graph) that the graph models read.
#pragma once
#include <memory>

#include "matmem/models/tasks/tasks.hpp"
#include "matmem/ops/graph.hpp"

namespace matmem {

struct CitationGraphOptions {
  std::int64_t nodes = 2708, classes = 7, words = 1433;
  double degree = 4.0;     // mean degree 2m/n
  double homophily = 0.8;  // share of edges within a class
  std::int64_t words_per_node = 18, topic_words = 100;
  double feature_signal = 0.2;
  std::int64_t test = 1000, validation = 100;
  std::uint64_t seed = 1;
};

struct CitationGraph {
  std::int64_t nodes = 0, classes = 0, words = 0;
  std::vector<std::int64_t> label;                  // class of each node
  std::vector<std::pair<std::int64_t, std::int64_t>> edges;  // undirected, i < j
  Neighbours neighbours;                            // both directions of every edge, sorted per node
  std::vector<std::vector<std::int32_t>> features;  // each node's words (sorted, distinct)
  std::vector<std::int64_t> train, validation, test;  // node ids of each split
  double mean_degree() const { return nodes ? 2.0 * double(edges.size()) / double(nodes) : 0.0; }
  double homophily() const;  // share of edges within a class
};

// Throws Error naming the option when one is out of range (classes ≥ 2, nodes ≥ 2·classes, 0 ≤ homophily ≤
// 1, the edges must fit in the pairs available, the splits must leave training nodes).
CitationGraph make_citation_graph(const CitationGraphOptions& o);

struct GraphTaskOptions {
  CitationGraphOptions graph;
  std::int64_t feature_rows = 1;
  std::int64_t sample = 50;  // neighbours per node while training (0: all)
};

class GraphTask : public SplitTask {
 public:
  static constexpr std::int64_t kTrain = 1, kValidation = 2, kTest = 3;
  explicit GraphTask(GraphTaskOptions o);
  const char* name() const override { return "graph"; }
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  void sample_size_into(Rng& rng, std::int64_t split, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "split"; }
  std::vector<std::int64_t> eval_sizes() const override { return {kTrain, kValidation, kTest}; }
  std::int64_t input_rows() const override { return o_.feature_rows; }
  std::int64_t input_cols() const override { return feature_cols_; }
  std::int64_t output_rows() const override { return 1; }
  std::int64_t output_cols() const override { return graph_.classes; }
  std::int64_t batch() const override { return graph_.nodes; }
  TargetKind target_kind() const override { return TargetKind::classes; }
  const CitationGraph& graph() const { return graph_; }
  static const char* split_name(std::int64_t split);  // "train", "validation", "test"
  // As a SplitTask: a part is its labelled nodes, read in one batch (the whole graph with that part's targets),
  // and one training step is one epoch.
  std::int64_t split_size(Split s) const override;
  void split_batch_into(Split s, std::int64_t first, std::int64_t count, Sequence& out,
                        DType dtype = DType::f32) const override;
  std::int64_t eval_batch(Split s, std::int64_t) const override { return split_size(s); }
  std::int64_t steps_per_epoch() const override { return 1; }
  const char* example_name() const override { return "nodes"; }

 private:
  GraphTaskOptions o_;
  CitationGraph graph_;
  std::int64_t feature_cols_ = 0;
  std::shared_ptr<const Neighbours> full_;
  void fill(std::int64_t split, Sequence& out, DType dtype) const;
};

}  // namespace matmem
