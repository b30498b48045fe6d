// dnc_allocation: the DNC's allocation weighting (spec/dnc.md §4), as [D] (`addressing.py::Freeness._allocation`):
//   û = ε + (1 − ε) u,  ε = 1e-6                       (in [D], not in [N]: no û is 0, and 1 − û < 1)
//   φ = the slots sorted by ascending û, ties to the lower slot index first (a stable sort; [D]'s top_k on
//       1 − û orders ties the same way)
//   a[φ_j] = (1 − û[φ_j]) Π_{k<j} û[φ_k]               ([N]: the same with u in place of û)
//   u:[B,N] -> [B,N]
// The sort is piecewise constant: the gradient flows through the sorted values s_j = û[φ_j] and back to
// their slots, the permutation gets none ([N] "ignores the discontinuities"; [D]'s top_k does the same).
// With P_j = Π_{k<j} s_k and the upstream gradient g_j = g[φ_j], no division (a usage may be tiny):
//   ∂s_k = P_k (T_k − g_k),  T_k = Σ_{j>k} g_j (1 − s_j) Π_{k<i<j} s_i  (T_{N−1} = 0, T_{k−1} = g_k (1 − s_k) + s_k T_k)
//   grad_u[φ_k] += (1 − ε) ∂s_k
// Saved: φ [B,N] (slot indices as T, exact to 2^24 slots); scratch: one row [N] (û forward, P backward).
// O(N log N) per sample. Layout: weightings are row-major [B,1,N], sample b's slots at b·N.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "matmem/ops/check.hpp"
#include "matmem/ops/dnc.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
constexpr double kEps = 1e-6;  // as [D]

template <class T>
struct DncAllocationKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    T* uh = c.scratch;
    for (std::int64_t b = 0; b < B; ++b) {
      const T* u = c.x[0] + b * N;
      T *phi = c.saved + b * N, *y = c.y + b * N;
      for (std::int64_t n = 0; n < N; ++n) uh[n] = T(kEps) + T(1 - kEps) * u[n];
      std::iota(phi, phi + N, T(0));
      std::sort(phi, phi + N, [uh](T x, T z) {  // ascending û, then ascending slot: a total order
        const auto i = std::int64_t(x), j = std::int64_t(z);
        return uh[i] < uh[j] || (uh[i] == uh[j] && i < j);
      });
      T prod = 1;  // Π_{k<j} s_k
      for (std::int64_t j = 0; j < N; ++j) {
        const std::int64_t n = std::int64_t(phi[j]);
        y[n] = (T(1) - uh[n]) * prod;
        prod *= uh[n];
      }
    }
  }
  static void backward(const OpCall<T>& c) {
    T* gu = c.grad_x[0];
    if (!gu) return;
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    T* before = c.scratch;  // P_j
    for (std::int64_t b = 0; b < B; ++b) {
      const T *u = c.x[0] + b * N, *phi = c.saved + b * N, *g = c.grad_y + b * N;
      auto s = [&](std::int64_t j) { return T(kEps) + T(1 - kEps) * u[std::int64_t(phi[j])]; };
      T prod = 1;
      for (std::int64_t j = 0; j < N; ++j) before[j] = prod, prod *= s(j);
      T later = 0;  // T_k
      for (std::int64_t k = N - 1; k >= 0; --k) {
        const std::int64_t n = std::int64_t(phi[k]);
        const T sk = s(k);
        gu[b * N + n] += T(1 - kEps) * before[k] * (later - g[n]);
        later = g[n] * (T(1) - sk) + sk * later;
      }
    }
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) {
  const double N = double(y.cols), sort = N > 1 ? N * std::log2(N) : 1.0;
  return {double(y.batch) * (5.0 * N + sort), 9.0 * y.numel()};
}
constexpr OpDef kOp = make_op<DncAllocationKernel>("dnc_allocation", flops);
}  // namespace

Var dnc_allocation(Var usage) {
  if (!usage.valid()) throw Error("dnc_allocation: the usage is an empty Var");
  const Shape& s = usage.shape();
  if (!ops::is_weighting(s)) ops::shape_error("dnc_allocation", "the usage must be a weighting [B,N]", usage);
  if (s.cols > (std::int64_t(1) << 24))
    ops::shape_error("dnc_allocation", "at most 2^24 slots (the saved order holds slot indices as floats)", usage);
  return usage.tape->apply(kOp, {usage}, s, {}, s.numel(), s.cols);
}

// Usages in [0, 1] that keep apart: sample b's slots get (π_b(n) + 0.5 + δ) / N for a random permutation π_b
// and δ uniform in [−0.25, 0.25], so any two differ by at least 0.5 / N (0.038 at the 13 slots of
// SampleSize::large), far more than gradcheck's step of 1e-6: no central difference crosses an order change.
OpEntry dnc_allocation_entry() {
  return {"dnc_allocation", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            Tensor u(DType::f64, weighting(d.batch, d.slots));
            std::vector<std::int64_t> order(static_cast<std::size_t>(d.slots));
            for (std::int64_t b = 0; b < d.batch; ++b) {
              std::iota(order.begin(), order.end(), std::int64_t(0));
              for (std::int64_t n = d.slots - 1; n > 0; --n)  // Fisher–Yates
                std::swap(order[std::size_t(n)], order[std::size_t(rng.uniform_int(std::uint64_t(n + 1)))]);
              for (std::int64_t n = 0; n < d.slots; ++n)
                u.set(b * d.slots + n, (double(order[std::size_t(n)]) + 0.5 + rng.uniform(-0.25, 0.25)) / double(d.slots));
            }
            OpSample sample;
            sample.inputs = {{"u", std::move(u)}};
            sample.apply = [](Tape&, std::span<const Var> x) { return dnc_allocation(x[0]); };
            return sample;
          }};
}

}  // namespace matmem
