// The Matrix Neural Turing Machine (000 §4.1, Figure 1; spec/models.md "MatNTM"), addressing as in the NTM.
//
// Per time step t, with memory M_{t−1} [B,N,mr,mc], previous reads R_{t−1}^{(h)} and weightings w_{t−1}^{(h)}:
//  1. controller: H_t = controller(X_t, R_{t−1}^{(1..n_read)}), each read entering layer 1 through its own
//     bilinear term (a stack of MatRNN, MatLSTM or feed-forward layers: models/layers/cells.hpp; a
//     feed-forward controller, Graves et al.'s, sees its past only through R_{t−1}); with `controller_clip`
//     c > 0 every layer's H (and an LSTM's C) is clipped to ±c in the forward pass;
//  2. each head from H_t: K = mat(H) [mr,mc]; β = softplus(mat(H)); g = sigm(mat(H)); s = softmax(mat(H))
//     [2S+1]; γ = 1 + softplus(mat(H)); write heads also E = sigm(mat(H)), A = mat(H) [mr,mc] (the NTM
//     paper's unbounded add vector; `add_activation` sigmoid: A = sigm(mat(H)), fumin/ntm's: each element of A in
//     (0, 1), so a write adds at most w(i) to an element of slot i and a memory started positive stays positive);
//  3. w^c = softmax(β cos(K, M_{t−1})); w^g = g w^c + (1 − g) w_{t−1}; w̃ = shift(w^g, s); w_t = sharpen(w̃, γ);
//  4. read heads read R_t = Σ_i w_t(i) M_{t−1}(i); then write heads write M_t = write(M, w_t, E, A) in order;
//  5. Y_t = mat(H_t, R_t^{(1..n_read)}) (logits), clipped to ±c too when `clip_logits` (DeepMind's DNC clips its
//     output so: spec/dnc.md §8).
// cos(K, M(i)) = ⟨K, M(i)⟩_F / (|K| |M(i)| + ε_p): by default exact norms and ε_p = 1e-8 (ops/ops.hpp,
// CosineEps), so near a zero slot the memory's gradient grows as 1/‖M(i)‖_F (up to g K / 1e-8); with
// `cosine_eps` ε > 0 the norms are |x| = √(‖x‖_F² + ε) and ε_p = ε, DeepMind's DNC form (spec/dnc.md), which
// bounds it by g K / (‖K‖ √ε + ε).
// Initial state: memory 1e-6 everywhere; R_0 learned (N(0, 0.01²)); controller states 0; w_0 focused on
// the first slot (w_0 = δ_1), as in Collier & Beel's NTM implementation, which also starts the memory at
// 1e-6. The memory's start is one of the three Collier & Beel compared (`memory_init`): constant (1e-6, the
// default), learned (a parameter ntm/init/memory, N(0, σ²) at first, σ = `memory_init_std`, 0.01 by default;
// fumin/ntm's NTM, which learns N-grams one sequence an update, starts its memory at U(−0.5, 0.5), σ ≈ 0.29), or random (N(0, 0.5²) truncated at
// ±1, drawn once from the model's seed and the same for every sequence: unlike a draw per batch it keeps
// the loss a function of the parameters alone, so gradcheck and bit-for-bit resume hold; the other
// parameters start exactly as with a constant memory). With w_0 = 0 (`initial_weighting = zero`, spec/models.md's literal reading) and a memory equal in
// every slot, every weighting stays uniform (content addressing sees identical slots, and gating, shifting
// and sharpening a uniform weighting keep it uniform), so all slots receive the same writes forever and the
// memory degenerates to one slot; tests/models/ntm shows both.
// An LSTM controller's forget gates start with bias `forget_bias`, -1 by default where a MatLSTM on its own
// starts at 1. With 1 the controller keeps the sequence in its own cells early in training: on 3 of 5 copy
// seeds it never learned to use the memory, and no recall seed fell below 1 bit in 100,000 steps; with -1
// every seed of both did, within 20,000 steps (models/results/convergence.md).
// Parameters: ntm/ctrl/l<k>/…, ntm/read<k>/{key,beta,gate,shift,gamma}/…, ntm/write<k>/{…,erase,add}/…,
// ntm/out/…, ntm/init/read<k>.
// Exposed per step (Step::expose, for an observer such as `matmem inspect`): read<k>/weighting and
// write<k>/weighting [B,N] (w_t), and memory [B,N,mr,mc] (M_t, after this step's writes).
#pragma once
#include <vector>

#include "matmem/models/layers/cells.hpp"

namespace matmem {

struct NTMConfig {
  CellKind controller = CellKind::rnn;  // rnn, lstm or ff
  double forget_bias = -1.0;            // an LSTM controller's forget-gate bias at the start
  double controller_clip = 0;           // > 0: the controller's H (and C) clipped to ±this; 0: not clipped
  bool clip_logits = false;             // the output logits clipped to ±controller_clip too
  std::vector<std::pair<std::int64_t, std::int64_t>> layers = {{15, 15}, {15, 15}};
  std::int64_t slots = 120, slot_rows = 6, slot_cols = 6;
  int read_heads = 1, write_heads = 1;
  int shift = 1;  // S: shifts -S..S
  enum class Start { first_slot, zero } initial_weighting = Start::first_slot;
  enum class MemoryInit { constant, learned, random } memory_init = MemoryInit::constant;
  double memory_init_std = 0.01;  // a learned memory's start: N(0, memory_init_std²), > 0
  double cosine_eps = 0;  // > 0: CosineEps{ε, ε} (DeepMind's DNC); 0: exact norms, 1e-8 on their product
  enum class AddActivation { linear, sigmoid } add_activation = AddActivation::linear;  // the write heads' A
  std::int64_t input_rows = 6, input_cols = 5, output_rows = 5, output_cols = 5;
  // Keep every time step's memory (1), or only every n-th, the others recomputed in backward (a recomputed
  // chain, Tape::chain); 0 (the default): n chosen from the memory's size (Step::auto_segment: 4 for the
  // paper's 16 x 120 slots of 6x6, 1 for a memory under 128 KiB). Results are the same bit for bit; the
  // time and memory n saves or costs are measured in tools/results/training-speed.md, "Memory recomputation".
  int memory_segment = 0;
};

class MatNTM : public Model {
 public:
  MatNTM(const NTMConfig& config, DType dtype, std::uint64_t seed, std::string name = "ntm");
  void step(Step& s) override;
  const NTMConfig& config() const { return config_; }

 private:
  struct Head {
    bool write;
    std::string weighting;  // state name
    std::string key, beta, gate, shift, gamma, erase, add;  // parameter paths
    std::string exposed;    // name of its weighting for Step::expose: read<k>/weighting, write<k>/weighting
  };
  NTMConfig config_;
  Controller controller_;
  std::vector<std::string> reads_, read_terms_;
  std::vector<Head> heads_;  // read heads first, then write heads
  std::string out_;
};

}  // namespace matmem
