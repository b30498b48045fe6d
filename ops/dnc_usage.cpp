// dnc_usage: the DNC's retention and usage (spec/dnc.md §4), one op for both (ψ is used nowhere else):
//   ψ_n = Π_{i=1..R} (1 − f_i w^r_{i,n}),   v_n = u_n + w_n − u_n w_n,   y_n = v_n ψ_n
//   u = u_{t−1}, w = w^w_{t−1}:[B,N];  f_i = g^{f,i}:[B,1], w^r_i = w^{r,i}_{t−1}:[B,N], 1 ≤ R ≤ 16  -> u_t [B,N]
// [N] differentiates y through w as well; [D] (`addressing.py::Usage`) puts tf.stop_gradient on w^w_{t−1}, and
// this op follows [D]: w gets no gradient (backward never writes it), the others do. With q_i = 1 − f_i w^r_{i,n}
// and Q_i = Π_{k≠i} q_k (prefix and suffix products: no division by a q that may be 0), per sample and slot:
//   grad_u_n += g_n ψ_n (1 − w_n),   grad_f_i += Σ_n −g_n v_n w^r_{i,n} Q_i,   grad_w^r_{i,n} += −g_n v_n f_i Q_i
// [D] with several write heads replaces w by 1 − Π_k (1 − w^{w,k}); with one head (here) the two agree.
// Layout: weightings are row-major [B,1,N] (sample b's slots at b·N), scalars at b. No saved or scratch.
#include <array>
#include <string>
#include <vector>

#include "matmem/ops/check.hpp"
#include "matmem/ops/dnc.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
template <class T>
struct DncUsageKernel {
  // Inputs: u_{t−1}, w^w_{t−1}, then the R free gates, then the R read weightings.
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols, R = (c.arity - 2) / 2;
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t o = b * N + n;
        const T u = c.x[0][o], w = c.x[1][o];
        T psi = 1;
        for (std::int64_t i = 0; i < R; ++i) psi *= T(1) - c.x[2 + i][b] * c.x[2 + R + i][o];
        c.y[o] = (u + w - u * w) * psi;
      }
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols, R = (c.arity - 2) / 2;
    std::array<T, kDncMaxReadHeads> q, before;  // q_i, and Π_{k<i} q_k
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t o = b * N + n;
        const T u = c.x[0][o], w = c.x[1][o], g = c.grad_y[o];
        T psi = 1;
        for (std::int64_t i = 0; i < R; ++i) {
          before[i] = psi;
          q[i] = T(1) - c.x[2 + i][b] * c.x[2 + R + i][o];
          psi *= q[i];
        }
        if (c.grad_x[0]) c.grad_x[0][o] += g * psi * (T(1) - w);
        // c.grad_x[1] (w^w_{t−1}) is left alone: the stop-gradient of [D].
        const T g_psi = g * (u + w - u * w);
        T after = 1;  // Π_{k>i} q_k
        for (std::int64_t i = R - 1; i >= 0; --i) {
          const T others = before[i] * after;  // Q_i
          if (c.grad_x[2 + i]) c.grad_x[2 + i][b] -= g_psi * c.x[2 + R + i][o] * others;
          if (c.grad_x[2 + R + i]) c.grad_x[2 + R + i][o] -= g_psi * c.x[2 + i][b] * others;
          after *= q[i];
        }
      }
  }
};
Flops flops(const Shape*, int arity, const Shape& y, const OpAttrs&) {
  const double R = (arity - 2) / 2;
  return {(3.0 + 2.0 * R) * y.numel(), (6.0 + 7.0 * R) * y.numel()};
}
constexpr OpDef kOp = make_op<DncUsageKernel>("dnc_usage", flops);
}  // namespace

Var dnc_usage(Var u_prev, Var w_write_prev, std::span<const Var> free_gates, std::span<const Var> read_weights_prev) {
  ops::same_tape("dnc_usage", u_prev, w_write_prev);
  const Shape& us = u_prev.shape();
  if (!ops::is_weighting(us)) ops::shape_error("dnc_usage", "u_prev must be a weighting [B,N]", u_prev);
  if (w_write_prev.shape() != us) ops::shape_error("dnc_usage", "u_prev and w_write_prev must both be [B,N]", u_prev, w_write_prev);
  if (free_gates.empty() || free_gates.size() > kDncMaxReadHeads || free_gates.size() != read_weights_prev.size())
    throw ShapeError(fmt::format("dnc_usage: {} free gates and {} read weightings: wants one of each per read head, "
                                 "1 to {} heads", free_gates.size(), read_weights_prev.size(), kDncMaxReadHeads));
  std::vector<Var> in = {u_prev, w_write_prev};
  for (Var f : free_gates) {
    ops::same_tape("dnc_usage", u_prev, f);
    if (!ops::is_scalars(f.shape()) || f.shape().batch != us.batch)
      ops::shape_error("dnc_usage", "each free gate must be a per-sample scalar [B,1] of u_prev's B", u_prev, f);
    in.push_back(f);
  }
  for (Var r : read_weights_prev) {
    ops::same_tape("dnc_usage", u_prev, r);
    if (r.shape() != us) ops::shape_error("dnc_usage", "each read weighting must have u_prev's shape [B,N]", u_prev, r);
    in.push_back(r);
  }
  return u_prev.tape->apply(kOp, in, us);
}

// Values in the ranges of a DNC: usages, weightings and gates in [0, 1], R = 3 heads. w^w_{t−1} is not
// differentiable (the stop-gradient): gradcheck does not perturb it, and its gradient is checked to be 0 by
// tests/ops/dnc_test.cpp.
OpEntry dnc_usage_entry() {
  return {"dnc_usage", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            constexpr int R = 3;
            OpSample sample;
            sample.inputs = {{"u_prev", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)},
                             {"w_write_prev", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0), false}};
            for (int i = 0; i < R; ++i)
              sample.inputs.push_back({"f_" + std::to_string(i + 1), random_tensor(rng, scalars(d.batch), 0.0, 1.0)});
            for (int i = 0; i < R; ++i)
              sample.inputs.push_back({"w_read_" + std::to_string(i + 1), random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)});
            sample.apply = [](Tape&, std::span<const Var> x) {
              return dnc_usage(x[0], x[1], x.subspan(2, R), x.subspan(2 + R, R));
            };
            return sample;
          }};
}

}  // namespace matmem
