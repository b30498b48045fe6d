// Stacked matrix recurrent networks: MatRNN, MatLSTM, MatGRU (spec/models.md "Layers and cells").
//   layer 1 reads the input frame X_t, layer l > 1 reads H_t of layer l − 1; Y_t = mat(H_t of the last layer)
//   (logits). Any number of layers, any (rectangular) sizes; the vector RNN is rows = 1.
// Parameters: <name>/l<k>/… for layer k (see models/layers/cells.hpp), <name>/out/h/U, …/V, <name>/out/B.
#pragma once
#include <utility>
#include <vector>

#include "matmem/models/layers/cells.hpp"

namespace matmem {

struct RecurrentConfig {
  CellKind cell = CellKind::rnn;
  double forget_bias = 1.0;  // LSTM: the forget gate's bias at the start
  std::vector<std::pair<std::int64_t, std::int64_t>> layers = {{15, 15}, {15, 15}};
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
};

}  // namespace matmem
