#include "matmem/autodiff/profile.hpp"

#include "matmem/autodiff/op.hpp"

namespace matmem {

OpProfile::Row& OpProfile::row(const OpDef& op) {
  for (std::size_t k = 0; k < ops_.size(); ++k)
    if (ops_[k] == &op) return rows[k];
  ops_.push_back(&op);
  rows.push_back({op.name});
  rows.back().gemm = op.gemm;
  return rows.back();
}

double OpProfile::total_ns() const {
  double t = 0;
  for (const Row& r : rows) t += r.forward_ns + r.backward_ns;
  return t;
}

}  // namespace matmem
