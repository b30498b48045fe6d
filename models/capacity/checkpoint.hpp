// The recurrent bilinear term of a trained MatRNN layer as a matrix network for the capacity analysis.
// A MatRNN layer computes H_t = tanh(U_xᵀ X_t V_x + U_hᵀ H_{t−1} V_h + B) (models/layers/cells.hpp); its
// linearisation around 0 with a scalar input is X(n) = U_hᵀ X(n−1) V_h + W s(n) + Z(n), eq. 5 with f = id.
// The checkpoint stores U_h and V_h as `<prefix>/h/U` and `<prefix>/h/V` ([r,r] or [1,r,r]); names are also
// looked up under `param/`, where `matmem train` keeps parameters (param/matrnn/l1/h/U). W is not a
// parameter of the layer, so it is drawn with Tr(WᵀW) = 1 unless a tensor name for it is given.
#pragma once
#include <string>

#include "matmem/models/capacity/capacity.hpp"
#include "matmem/runtime/random.hpp"

namespace matmem::capacity {

struct CheckpointSource {
  std::string path;
  std::string prefix = "matrnn/l1";
  std::string w_name;  // empty: W = random_input(r, c, rng)
};

MatrixNet load_matrix_net(const CheckpointSource& src, Noise noise, Rng& rng);

}  // namespace matmem::capacity
