// A matrix RNN with a content-addressed memory of N slots of r×c matrices:
//   w_t = softmax(β cos(K_t, M_{t−1})), w'_t likewise with K'_t    read and write weightings over the slots
//   K_t = U_xᵀ X_t V_x + U_hᵀ H_{t−1} V_h + B, K'_t likewise       read and write keys, r×c
//   R_t = Σ_i w_t,i M_{t−1,i}                                       the read
//   H_t = tanh(U_xᵀ X_t V_x + U_hᵀ H_{t−1} V_h + U_rᵀ R_t V_r + B)
//   M_t = M_{t−1} ⊙ (1 − w'_t E_t) + w'_t A_t,  E_t = σ(U_eᵀ H_t V_e + B_e),  A_t = tanh(U_aᵀ H_t V_a + B_a)
//   Y_t = U_yᵀ H_t V_y + U_rᵀ R_t V_r + B_y                         β = softplus(θ), θ learned
// H_0 and M_0 are learned. Neither starts at zero: cos(K, M_i) has no derivative where ‖M_i‖ = 0 (the op takes
// 0 there), so a memory that starts at zero can neither be addressed nor gradient-checked.
#pragma once
#include <matmem/models/registry.hpp>

namespace mine {
using namespace matmem;

class MemoryRNN : public Model {
 public:
  MemoryRNN(const Task& task, Shape h, Shape m, DType dtype, std::uint64_t seed)
      : Model("memrnn", dtype, seed), h_(h), m_(m) {
    set_io(task.input_rows(), task.input_cols(), task.output_rows(), task.output_cols());
    declare_state({.name = "h", .shape = h, .start = StateDecl::learned, .learned_init = Init::Normal(0, 0.1)});
    declare_state({.name = "memory", .shape = m, .start = StateDecl::learned, .learned_init = Init::Normal(0, 0.5)});
  }

  void step(Step& s) override {
    const Var x = s.input(), h = s.state("h"), m = s.state("memory");
    const Var beta = softplus(s.parameter("memrnn", "", "beta", parameter(1, 1), Init::Constant(2.0)));
    auto address = [&](std::string_view key) {
      return softmax(hadamard(cosine_similarity(s.mat(key, {{"x", x}, {"h", h}}, m_.rows, m_.cols), m), beta));
    };
    const Var w_read = address("memrnn/read_key"), w_write = address("memrnn/write_key");
    const Var read = memory_read(m, w_read);
    const Var h_next = tanh(s.mat("memrnn/cell", {{"x", x}, {"h", h}, {"r", read}}, h_.rows, h_.cols));
    const Var erase = sigmoid(s.mat("memrnn/erase", {{"h", h_next}}, m_.rows, m_.cols));
    const Var write = tanh(s.mat("memrnn/add", {{"h", h_next}}, m_.rows, m_.cols));
    s.next("h", h_next);
    s.next("memory", memory_write(m, w_write, erase, write));
    if (s.output_needed()) s.output(s.mat("memrnn/out", {{"h", h_next}, {"r", read}}, output_rows(), output_cols()));
  }

 private:
  Shape h_, m_;  // per sample: H [1,rows,cols], M [1,N,r,c]
};

// From a run's config: H of model.layers' first size, memrnn.slots slots of memrnn.slot (RxC; plugin.cpp adds both).
inline std::unique_ptr<Model> make_memory_rnn(const Config& c, const Task& task, DType dtype, std::uint64_t seed) {
  const auto [rows, cols] = c.sizes("model.layers").front();
  const auto [slot_rows, slot_cols] = c.sizes("memrnn.slot").front();
  const Shape m = memory(1, c.integer("memrnn.slots"), slot_rows, slot_cols);
  return std::make_unique<MemoryRNN>(task, parameter(rows, cols), m, dtype, seed);
}

}  // namespace mine
