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
//
// With batch norm (norm = batch, as ffn's: 001's deep nets were batch-normalised) every hidden layer — the
// encoder's K and the decoder's K − 1, all but the reconstruction — normalises its pre-activation, each element
// over the whole batch (ops/batch_norm.hpp), with its own gain and shift:
//   H_l = σ(Gₗ ⊙ BN(U_lᵀ H_{l−1} V_l) + Dₗ),   G_{l−1} = σ(G'ₗ ⊙ BN(U_l G_l V_lᵀ) + D'ₗ)  (l ≥ 2)
// BN(Z + B) = BN(Z), so those layers have no B_l and no C_l (l ≥ 2); in the vector auto-encoder (r = 1) a 1×1
// U_l with l ≥ 2 only scales BN's operand in both layers it serves and is left out too (U_1 stays: the
// reconstruction is not normalised). Parameters then: <name>/l<k>/h/U (see above), …/V, <name>/l1/C,
// <name>/l<k>/norm/G, …/D (encoder), <name>/l<k>/dnorm/G, …/D (decoder, k ≥ 2), and the buffers (running
// statistics, not learned) …/norm/running_mean, …/norm/running_var and the same under dnorm.
#pragma once
#include <string>
#include <vector>

#include "matmem/models/layers/cells.hpp"
#include "matmem/ops/batch_norm.hpp"

namespace matmem {

struct AutoencoderConfig {
  std::int64_t rows = 20, cols = 20;  // the hidden layers' shape (1×n: a vector auto-encoder)
  std::int64_t encoder_layers = 10;   // K: 2K layers in all
  Activation activation = Activation::sigmoid;
  bool batch_norm = false;  // norm = batch (see the file)
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
  // batch_norm: the running statistics of encoder layer l (enc_running_[l − 1]) and decoder layer l ≥ 2
  // (dec_running_[l − 1]; dec_running_[0] unused)
  std::vector<BatchNormRunning> enc_running_, dec_running_;
};

}  // namespace matmem
