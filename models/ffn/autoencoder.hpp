// Deep tied-weight matrix auto-encoders (001 §4.1.2): an encoder of K layers of one hidden shape r×c and a
// decoder that maps back through the same U_l and V_l, transposed. With r = 1 (and a 1×n input: the image
// flattened) every map is a dense layer, and the decoder uses the encoder's weight matrices transposed: the
// vector auto-encoder.
//
//   encoder:  H_0 = X (the corrupted image),  H_l = σ(U_lᵀ H_{l−1} V_l + B_l),   l = 1..K
//             (U_l:[r_{l−1}, r], V_l:[c_{l−1}, c], B_l:[r, c]; r_0 × c_0 the input's shape)
//   decoder:  G_K = H_K,  G_{l−1} = σ(U_l G_l V_lᵀ + C_l),  l = K..2   (C_l:[r_{l−1}, c_{l−1}], its own bias)
//             Y = sigmoid(U_1 G_1 V_1ᵀ + C_1)  : the reconstruction, in (0, 1) like the pixels
// U_l G V_lᵀ is bilinear(G, U_lᵀ, V_lᵀ) with ops' transpose (ops/transpose.hpp). 2K layers in all (the paper's
// depths 20 and 40: K = 10, 20). The loss is the mean squared error against the clean image (target kind reals).
// Parameters: <name>/l<k>/h/U, …/V, <name>/l<k>/B (encoder), <name>/l<k>/C (decoder).
// Parameter count: Σ_l (r_{l−1} r + c_{l−1} c + r c + r_{l−1} c_{l−1}).
#pragma once
#include <string>
#include <vector>

#include "matmem/models/layers/cells.hpp"

namespace matmem {

struct AutoencoderConfig {
  std::int64_t rows = 20, cols = 20;  // the hidden layers' shape (1×n: a vector auto-encoder)
  std::int64_t encoder_layers = 10;   // K: 2K layers in all
  Activation activation = Activation::sigmoid;
  std::int64_t input_rows = 28, input_cols = 28;  // also the output's
};

class MatAutoencoder : public Model {
 public:
  MatAutoencoder(const AutoencoderConfig& config, DType dtype, std::uint64_t seed, std::string name = "autoencoder");
  void step(Step& s) override;
  const AutoencoderConfig& config() const { return config_; }

 private:
  AutoencoderConfig config_;
  std::vector<std::string> paths_;
  std::vector<Var> u_, v_;  // this step's U_l and V_l, kept for the decoder
};

}  // namespace matmem
