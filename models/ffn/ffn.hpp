// Deep matrix feed-forward nets (001 §2.2, §4.1.1): a stack of L hidden layers of one shape r×c over a
// matrix input X (an image as a 28×28 matrix; a 1×n row for the vector nets, which take the input
// flattened), and a softmax top layer. One time step: the model reads one frame and writes one output.
//
//   mat_l(H) = U_lᵀ H V_l + B_l                         (001 eq. 3; U_l:[r_in, r], V_l:[c_in, c], B_l:[r, c])
//   N_l(Z)   = G_l ⊙ LN(Z) + D_l   (norm = layer), or Z (norm = none); LN over each sample's r×c matrix
//                                  (ops/layer_norm.cpp), gain G_l (starts at 1) and shift D_l (starts at 0)
//   N_l(Z)   = G_l ⊙ BN(Z) + D_l   (norm = batch): BN normalises each element (i, j) over the whole batch
//                                  (ops/batch_norm.hpp: across the trainer's threads and ranks), in
//                                  evaluation by its running mean and variance (momentum 0.1, as PyTorch).
//                                  BN(Z + B) = BN(Z), so mat_l has no B_l here: a B_l would get no gradient
//                                  but rounding noise (which Adam scales up to steps of lr). In the vector
//                                  net (r = r_in = 1) U_l is a 1×1 scale, which BN cancels too: the layer is
//                                  H V_l alone. The matrix net's U_l stays: only the common scale of U_l and
//                                  V_l cancels, each has a gradient.
//   F_l(H)   = σ(N_l(mat_l(H)))                          (001 eq. 5, normalised before the nonlinearity)
//   H_0 = X;  H_1 = F_1(H_0);  for l = 2..L:  H_l = F_l(H_{l−1})               (plain)
//                                             H_l = H_{l−1} + F_l(H_{l−1})     (residual: the matrix ResNet
//                                                                               block of §2.2's skip-connections)
//   logits = U_oᵀ H_L V_o + B_o  : [1, classes]          (U_o:[r, 1], V_o:[c, classes]); the loss takes their softmax
// The first layer changes the shape, so it is never residual. With r = 1 every mat is a dense layer,
// y = h V + b (U_l a 1×1 scale): the vector net. 001 normalises with batch norm (norm = batch).
// Parameters: <name>/l<k>/h/U, …/V, <name>/l<k>/B, <name>/l<k>/norm/G, …/D, <name>/out/h/U, …/V, <name>/out/B;
// with norm = batch no <name>/l<k>/B (nor …/h/U in the vector net) and the buffers (Parameter::buffer, not
// learned) <name>/l<k>/norm/running_mean and …/running_var.
// Parameter count: Σ_l (r_in r + c_in c + r c) (+ 2 r c a layer with norm; − r c with batch norm, − 1 more in
// the vector net) + r + c·classes + classes.
#pragma once
#include <string>
#include <vector>

#include "matmem/models/layers/cells.hpp"
#include "matmem/ops/batch_norm.hpp"

namespace matmem {

struct FFNConfig {
  std::int64_t rows = 20, cols = 20;  // the hidden layers' shape r×c (1×n: a vector net)
  std::int64_t depth = 10;            // hidden layers L ≥ 1
  enum class Norm { none, layer, batch } norm = Norm::none;
  bool residual = false;
  Activation activation = Activation::relu;
  std::int64_t input_rows = 28, input_cols = 28, output_rows = 1, output_cols = 10;
};

class FFN : public Model {
 public:
  FFN(const FFNConfig& config, DType dtype, std::uint64_t seed, std::string name = "ffn");
  void step(Step& s) override;
  const FFNConfig& config() const { return config_; }

 private:
  FFNConfig config_;
  std::vector<std::string> paths_, norm_paths_;
  std::vector<BatchNormRunning> running_;  // norm = batch: each layer's running statistics
  std::string out_;
};

}  // namespace matmem
