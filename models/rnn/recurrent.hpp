// Stacked matrix recurrent networks: MatRNN, MatLSTM, MatGRU (spec/models.md "Layers and cells").
//   layer 1 reads the input frame X_t, layer l > 1 reads H_t of layer l − 1; Y_t = mat(H_t of the last layer)
//   (logits). Any number of layers, any (rectangular) sizes; the vector RNN is rows = 1.
// With attention_heads = k > 0 the output also reads the last layer's states so far (Ba et al. 2016's A-LSTM,
// an LSTM attending over its past hidden states, with matlstm 1×n):
//   P_t = [H_0; H_1; …; H_t]  (the states stacked by rows, (t+1)·r × c; ops stack_rows),
//   Q_t = tanh(mat(H_t))      (k × c: the queries, from the current state),
//   S_t = attention_read(Q_t, P_t): row j is Σ_i softmax_i(⟨q_j, p_i⟩) p_i,
//   Y_t = mat(H_t, S_t).
// With clip > 0 every layer's H (and a MatLSTM's C) is clipped to ±clip in the forward pass (models/layers/
// cells.hpp), and with clip_logits the output Y_t too.
// The read enters the output only, not the next step's state. Building P_t at each output step costs
// O(t·r·c) copies, so a sequence with an output at every step records O(T²) values.
// Parameters: <name>/l<k>/… for layer k (see models/layers/cells.hpp), <name>/out/h/U, …/V, <name>/out/B;
// with attention <name>/attend/h/U, …/V, <name>/attend/B (the queries) and <name>/out/s/U, …/V.
#pragma once
#include <utility>
#include <vector>

#include "matmem/models/layers/cells.hpp"

namespace matmem {

struct RecurrentConfig {
  CellKind cell = CellKind::rnn;
  double forget_bias = 1.0;  // LSTM: the forget gate's bias at the start
  double clip = 0;           // > 0: each layer's H (and C) clipped to ±clip; 0: not clipped
  bool clip_logits = false;  // Y_t clipped to ±clip too
  std::vector<std::pair<std::int64_t, std::int64_t>> layers = {{15, 15}, {15, 15}};
  std::int64_t attention_heads = 0;  // k queries over the last layer's states so far (0: no attention)
  std::int64_t input_rows = 6, input_cols = 5, output_rows = 5, output_cols = 5;
};

class RecurrentModel : public Model {
 public:
  RecurrentModel(const RecurrentConfig& config, DType dtype, std::uint64_t seed, std::string name = "");
  void step(Step& s) override;
  const RecurrentConfig& config() const { return config_; }

 private:
  RecurrentConfig config_;
  std::vector<MatCell> cells_;
  std::vector<std::string> h_, c_;  // state names per layer
  MatDense out_;
  Var output(Var y) const;  // y, clipped when clip_logits
  std::vector<Var> past_;  // the last layer's states H_0 … H_t of the sequence (attention_heads > 0)
};

}  // namespace matmem
