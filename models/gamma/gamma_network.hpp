// A feed-forward matrix network with a gamma-family memory (003 §1, §5; models/layers/gamma.hpp), in the model
// DSL. Dense layers are MatDense with tanh, D_l(Z…) = tanh(Σ_z U_zᵀ Z V_z + B); the memory's taps T_0..T_K
// each enter the layer after it as a term of its own.
//
//   focused (placement input):     T(n) = memory(X(n)),  H_1 = D_1(T_0(n), …, T_K(n)),  H_l = D_l(H_{l−1}),
//                                  Y(n) = mat(H_L) (logits). The memory holds the input's past; the layers are
//                                  static (003: a nonlinear moving-average model).
//   distributed (placement hidden): H_1 = D_1(X(n)),  T(n) = memory(H_1),  H_2 = D_2(T_0(n), …, T_K(n)),
//                                  H_l = D_l(H_{l−1}),  Y(n) = mat(H_L), or Y(n) = mat(T_0, …, T_K) with one
//                                  layer: the memory holds a hidden layer's past.
// The only recurrence is the memory's, with its μ (and ν) learned through backpropagation through time.
// Parameters: <name>/mem/mu_logit (and nu_logit), <name>/l<k>/<term>/U, …/V, <name>/l<k>/B, <name>/out/….
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "matmem/models/layers/cells.hpp"
#include "matmem/models/layers/gamma.hpp"

namespace matmem {

struct GammaNetworkConfig {
  GammaConfig memory;
  enum class Placement { input, hidden } placement = Placement::input;
  std::vector<std::pair<std::int64_t, std::int64_t>> layers = {{15, 15}};  // dense layers, rows × cols
  std::int64_t input_rows = 6, input_cols = 5, output_rows = 5, output_cols = 5;
};

class GammaNetwork : public Model {
 public:
  GammaNetwork(const GammaNetworkConfig& config, DType dtype, std::uint64_t seed, std::string name = "gamma");
  void step(Step& s) override;
  const GammaNetworkConfig& config() const { return config_; }
  // The memory's learned μ (and ν): <name>/mem/mu, <name>/mem/nu.
  std::vector<std::pair<std::string, double>> learned_scalars() const override {
    return memory_.learned_scalars(params());
  }

 private:
  // The layer after the memory, over its taps (terms named t0, t1, …).
  Var over_taps(Step& s, const MatDense& layer, const std::vector<Var>& taps) const;

  GammaNetworkConfig config_;
  GammaMemory memory_;
  std::vector<MatDense> layers_;
  MatDense out_;
  std::vector<std::string> tap_names_;
};

}  // namespace matmem
