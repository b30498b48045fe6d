// Matrix layers and recurrent cells (001 §2.2–2.3 and appendix A; spec/models.md "Layers and cells").
// A layer is an object made once with its parameter path and sizes; calling it inside Model::step
// records its ops. Inputs enter through `terms`: each term x gets its own bilinear map U_xᵀ x V_x.
//
//   MatDense:   Y = σ(mat(x…))                                              (001 eq. 5)
//   MatHighway: Z = sigm(mat(H)), H̃ = σ(mat(H)), Y = (1 − Z) ⊙ H + Z ⊙ H̃   (001 §2.2)
//   MatAttention: k soft reads of the m rows of P, then a bilinear map       (001 §2.1, eqs. 3–4)
//               Q = tanh(mat(P, context…)) [k × d]: the queries, a small network of P and its context;
//               S = attention_read(Q, P): s_j = α_jᵀ P, α_j = softmax_i ⟨q_j, p_i⟩ (ops/attention_read.hpp);
//               Y = σ(mat(S)). P is any matrix whose rows are the items read (a memory of 1 × d slots
//               written as an m × d matrix, a set of states stacked by rows).
//   MatRNN:     H_t = tanh(mat(x…, H_{t−1}))                                 (000 eq. 6, 001 eq. 8)
//   MatLSTM:    I, F, O = sigm(mat(x…, H_{t−1})) each with its own θ, Ĉ = tanh(mat(x…, H_{t−1})),
//               C_t = F ⊙ C_{t−1} + I ⊙ Ĉ, H_t = O ⊙ tanh(C_t); no peepholes; the forget gate's
//               bias starts at `forget_bias` (config keys lstm.forget_bias, ntm.forget_bias), the others at 0
//   MatGRU:     Z, R = sigm(mat(x…, H_{t−1})), H̃ = tanh(mat(x…, R ⊙ H_{t−1})),
//               H_t = (1 − Z) ⊙ H_{t−1} + Z ⊙ H̃                              (001 appendix A)
//   feed-forward (CellKind::ff): H_t = tanh(mat(x…)), no state of its own: Graves et al. 2014's feed-forward
//               NTM controller (§4: it sees its past only through the previous reads among its inputs x…).
//               Graves et al. do not state its nonlinearity; tanh bounds H as the recurrent cells' outputs are.
// Clipping (`clip` > 0; config key controller.clip): after each step the cell's outputs are clipped to ±clip in
// the forward pass, clip(v) = min(max(v, −clip), clip), its gradient zero outside (ops/clip.cpp): H_t for every
// kind, and C_t for the MatLSTM, before they are returned (so the next step and every reader see the clipped
// values), as DeepMind's DNC bounds its LSTM controller's state and output (clip_value 20, spec/dnc.md §8).
// Parameters: <path>/<term>/U, <path>/<term>/V, <path>/B; the gates of LSTM and GRU under <path>/i, /f,
// /o, /c and <path>/z, /r, /h; MatAttention's queries under <path>/query (terms P and the context's) and its
// output map under <path>/read (term S).
#pragma once
#include <string>
#include <vector>

#include "matmem/models/core/model.hpp"

namespace matmem {

enum class Activation { linear, sigmoid, tanh, relu };
Var activate(Activation a, Var x);

class MatDense {
 public:
  MatDense(std::string path, std::int64_t rows, std::int64_t cols, Activation act = Activation::linear);
  Var operator()(Step& s, std::span<const NamedTerm> terms) const;
  Var operator()(Step& s, std::initializer_list<NamedTerm> terms) const {
    return (*this)(s, std::span<const NamedTerm>(terms.begin(), terms.size()));
  }

 private:
  std::string path_;
  std::int64_t rows_, cols_;
  Activation act_;
};

class MatHighway {
 public:
  MatHighway(std::string path, std::int64_t rows, std::int64_t cols, Activation act = Activation::tanh);
  Var operator()(Step& s, Var h) const;

 private:
  std::string gate_, body_;
  std::int64_t rows_, cols_;
  Activation act_;
};

class MatAttention {
 public:
  // `heads` queries (k), each a row as wide as P's; the output rows × cols.
  MatAttention(std::string path, std::int64_t heads, std::int64_t rows, std::int64_t cols,
               Activation act = Activation::linear);
  Var operator()(Step& s, Var p, std::span<const NamedTerm> context = {}) const;
  Var operator()(Step& s, Var p, std::initializer_list<NamedTerm> context) const {
    return (*this)(s, p, std::span<const NamedTerm>(context.begin(), context.size()));
  }

 private:
  std::string query_, read_;
  std::int64_t heads_, rows_, cols_;
  Activation act_;
};

enum class CellKind { rnn, lstm, gru, ff };
CellKind cell_kind(const std::string& name);  // "rnn" | "lstm" | "gru" | "ff", else an Error naming the choices
const char* cell_name(CellKind k);

// A cell of any kind: one object, states h (recurrent kinds) and c (LSTM).
class MatCell {
 public:
  // clip: bound of the outputs (0: none; else > 0).
  MatCell(CellKind kind, std::string path, std::int64_t rows, std::int64_t cols, double forget_bias = 1.0,
          double clip = 0.0);
  CellKind kind() const { return kind_; }
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  bool has_cell_state() const { return kind_ == CellKind::lstm; }
  bool recurrent() const { return kind_ != CellKind::ff; }  // reads its previous h (a state to declare)

  struct State {
    Var h, c;  // h unused by a feed-forward cell's input; c only for LSTM
  };
  // The next state from the inputs `terms` (a recurrent cell adds the previous h as term "h").
  State operator()(Step& s, std::span<const NamedTerm> terms, State prev) const;

 private:
  State step(Step& s, std::span<const NamedTerm> terms, State prev) const;  // before clipping
  CellKind kind_;
  std::int64_t rows_, cols_;
  double forget_bias_, clip_;
  std::string path_, gate1_, gate2_, gate3_, gate4_;
};

/// One time step of a stack of cells (the MatNTM's and MatDNC's controllers): layer 1 reads `first` (the frame
/// and whatever else the model feeds it), every later layer the H of the layer below; layer l reads its
/// previous H from state h[l] when recurrent and its C from c[l] when an LSTM, and sets their next values.
/// Returns the top layer's H.
Var controller_step(Step& s, std::span<const MatCell> cells, std::span<const std::string> h,
                    std::span<const std::string> c, std::span<const NamedTerm> first);

/// A memory model's controller (the MatNTM's, the MatDNC's): cells of `kind`, one a layer (rows x cols), under
/// `<model>/ctrl/l<k>`, and the states they keep: layer k's H as "ctrl/l<k>/h" when recurrent, an LSTM's C as
/// "ctrl/l<k>/c". Refuses, naming the model, a GRU, no layers, and a clip < 0 or a logits clip without a bound.
struct Controller {
  struct StateShape {
    std::string name;
    std::int64_t rows, cols;
  };
  Controller(const std::string& model, CellKind kind, std::span<const std::pair<std::int64_t, std::int64_t>> layers,
             double forget_bias, double clip, bool clip_logits);
  /// The states its layers keep, for the model to declare (Model::declare_state).
  std::vector<StateShape> states() const;
  /// One time step (controller_step): layer 1 reads `first`; returns the top layer's H.
  Var step(Step& s, std::span<const NamedTerm> first) const { return controller_step(s, cells, h, c, first); }

  std::vector<MatCell> cells;
  std::vector<std::string> h, c;  ///< each layer's state names (a name whether or not the layer keeps it)
};

}  // namespace matmem
