// projections: several bilinear maps of one input, as one op with one output each.
//   Y_k = U_kᵀ X V_k + B_k,   X:[B,r,c], U_k:[r,r'_k], V_k:[c,c'_k], B_k:[r'_k,c'_k] -> Y_k:[B,r'_k,c'_k], k = 1..K
// Equal to K single-term mat calls (ops/bilinear.cpp, whose layout notes apply: X̂ is r x (B c)), but the
// K first-stage GEMMs Uᵀ X̂ are one, with the U's side by side in U_s = [U_1 | … | U_K] (r x R', R' = Σ r'_k):
//   T̂ = U_sᵀ X̂ (R' x B c; its row block k is T̂_k),   Ŷ_k = T̂_k V_k (as (r'_k B) x c times c x c'_k)
// and backward, with Ĥ_k = Ĝ_k V_kᵀ stacked into Ĥ (R' x B c):
//   grad_V_k += T̂_kᵀ Ĝ_k,   grad_B_k += Σ_b G_k,   grad_U_s += X̂ Ĥᵀ (then split into the grad_U_k),
//   grad_X̂ += U_s Ĥ
// so K projections cost K + 1 GEMMs forward and 2K + 2 backward instead of 2K and 4K, one more when T̂ is
// recomputed rather than saved (on a tape whose passes outgrow the cache, Tape::recompute_saved; as in mat).
// Every term is associated U first, the cheaper order when the outputs are smaller than X (the NTM heads'
// 1x1 … 6x6 projections of a 15x15 state).
// The vector form (r = 1 and every U_k 1x1, its one value u_k: a vector model's heads, X̂ a B x c matrix) is
// associated V first instead: U first would write K scaled copies of X̂ (K x B c) and read them back (Graves'
// priority-sort controller of 512 units at batch 16, 16 maps a call: 512 KiB a call, where Ẑ below is about 8).
// With every V_k side by side in V_s = [V_1 | … | V_K] (c x C, C = Σ c'_k, copied into scratch):
//   Ẑ = X̂ V_s (B x C; its column block k is Z_k = X̂ V_k),   Y_k = u_k Z_k + B_k
// and backward, with G̃ = [u_1 G_1 | … | u_K G_K] (B x C):
//   grad_u_k += <Z_k, G_k>_F,   grad_B_k += Σ_b G_k,   grad_V_s = X̂ᵀ G̃ (split into the grad_V_k),
//   grad_X̂ += G̃ V_sᵀ
// one GEMM forward and two backward whatever K, one more when Ẑ (B x C, saved in place of T̂) is recomputed.
// (One GEMM per V_k instead of the copy into V_s made Graves' priority-sort step slower: 18.8 against 14.3 ms
// of projections forward a step.) A test checks both forms against the separate mat calls in values and
// gradients, with T̂ (Ẑ) saved and recomputed, and gradchecks the vector form in float64 (the registry's
// sample draws the matrix form).
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "matmem/ops/bilinear.hpp"
#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/blas.hpp"

namespace matmem {
namespace {

struct Dims {
  std::int64_t K, B, r, c, R, C;  // R = Σ r'_k, C = Σ c'_k
  // The vector form (see the header): r = 1 and every U_k 1x1.
  bool vector() const { return r == 1 && R == K; }
};
Dims dims_of(const Shape* x, int arity) {
  Dims d{(arity - 1) / 3, x[0].batch, x[0].rows, x[0].cols, 0, 0};
  for (std::int64_t k = 0; k < d.K; ++k) d.R += x[1 + 3 * k].cols, d.C += x[2 + 3 * k].cols;
  return d;
}
// scratch, matrix form: U_s [r·R'], Ĥ [R'·B·c], grad_U_s [r·R'], grad_X̂'s product [r·B·c], T̂ [R'·B·c] (when
// it is not saved: forward writes it here and backward recomputes it, see Tape::recompute_saved), one Vᵀ
// [c·max c'_k]. Vector form: V_s [c·C], G̃ [B·C], grad_V_s [c·C], grad_X̂'s product [B·c], Ẑ [B·C] (when it is
// not saved).
std::int64_t t_hat_offset(const Dims& d) {
  return d.vector() ? 2 * d.c * d.C + d.B * d.C + d.B * d.c : 2 * d.r * d.R + d.R * d.B * d.c + d.r * d.B * d.c;
}
std::int64_t saved_size(const Dims& d) { return d.vector() ? d.B * d.C : d.R * d.B * d.c; }
std::int64_t scratch_size(const Dims& d, std::int64_t max_cols) {
  return t_hat_offset(d) + saved_size(d) + (d.vector() ? 0 : d.c * max_cols);
}

template <class T>
struct ProjectionsKernel {
  // U_s = [U_1 | … | U_K] (r x R'): a row of U_k is 1 to 6 values in the NTM's heads (ops::move_columns).
  static void stack_u(const OpCall<T>& c, const Dims& d, T* us) {
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t rk = c.x_shape[1 + 3 * k].cols;
      ops::move_columns<false>(c.x[1 + 3 * k], rk, us + off, d.R, d.r, rk);
      off += rk;
    }
  }

  // T̂ = U_sᵀ X̂ (U_s stacked in scratch first) into the saved buffer, or into scratch when it is recomputed.
  static T* t_hat(const OpCall<T>& c, const Dims& d) {
    const std::int64_t bc = d.B * d.c;
    T *us = c.scratch, *t = c.saved ? c.saved : c.scratch + t_hat_offset(d);
    stack_u(c, d, us);
    blas::gemm<T>(true, false, d.R, bc, d.r, T(1), us, d.R, c.x[0], bc, T(0), t, bc);
    return t;
  }

  // The vector form. V_s = [V_1 | … | V_K] (c x C).
  static void stack_v(const OpCall<T>& c, const Dims& d, T* vs) {
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t ck = c.x_shape[2 + 3 * k].cols;
      ops::move_columns<false>(c.x[2 + 3 * k], ck, vs + off, d.C, d.c, ck);
      off += ck;
    }
  }
  // Ẑ = X̂ V_s (V_s stacked in scratch first) into the saved buffer, or into scratch when it is recomputed.
  static T* z_hat(const OpCall<T>& c, const Dims& d) {
    T *vs = c.scratch, *z = c.saved ? c.saved : c.scratch + t_hat_offset(d);
    stack_v(c, d, vs);
    blas::gemm<T>(false, false, d.B, d.C, d.c, T(1), c.x[0], d.c, vs, d.C, T(0), z, d.C);
    return z;
  }
  static void forward_vector(const OpCall<T>& c, const Dims& d) {
    const T* z = z_hat(c, d);
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t ck = c.x_shape[2 + 3 * k].cols;
      const T u = c.x[1 + 3 * k][0], *bias = c.x[3 + 3 * k];
      T* y = c.ys[k];
      for (std::int64_t b = 0; b < d.B; ++b)
        for (std::int64_t j = 0; j < ck; ++j) y[b * ck + j] = u * z[b * d.C + off + j] + bias[j];
      off += ck;
    }
  }
  static void backward_vector(const OpCall<T>& c, const Dims& d) {
    const std::int64_t B = d.B, C = d.C;
    T *vs = c.scratch, *gt = vs + d.c * C, *gvs = gt + B * C, *tmp = gvs + d.c * C;
    bool any_u = false, any_v = false;
    for (std::int64_t k = 0; k < d.K; ++k) any_u = any_u || c.grad_x[1 + 3 * k], any_v = any_v || c.grad_x[2 + 3 * k];
    const T* z = c.saved ? c.saved : any_u ? z_hat(c, d) : nullptr;  // z_hat stacks V_s too
    if (c.saved || !any_u) stack_v(c, d, vs);
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t ck = c.x_shape[2 + 3 * k].cols;
      const T u = c.x[1 + 3 * k][0], *g = c.grad_ys[k];
      T acc = 0;
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0; j < ck; ++j) {
          gt[b * C + off + j] = u * g[b * ck + j];
          if (z) acc += z[b * C + off + j] * g[b * ck + j];
        }
      if (T* gu = c.grad_x[1 + 3 * k]) gu[0] += acc;
      if (T* gb = c.grad_x[3 + 3 * k]) ops::add_bias_grad(gb, g, B, 1, ck);
      off += ck;
    }
    if (any_v) {  // grad_V_s = X̂ᵀ G̃, split into the grad_V_k
      blas::gemm<T>(true, false, d.c, C, B, T(1), c.x[0], d.c, gt, C, T(0), gvs, C);
      off = 0;
      for (std::int64_t k = 0; k < d.K; ++k) {
        const std::int64_t ck = c.x_shape[2 + 3 * k].cols;
        if (T* gv = c.grad_x[2 + 3 * k]) ops::move_columns<true>(gvs + off, C, gv, ck, d.c, ck);
        off += ck;
      }
    }
    if (T* gx = c.grad_x[0]) {  // grad_X̂ += G̃ V_sᵀ
      ops::add_product(gx, c.fresh(0), B * d.c, tmp, [&](T* out) {
        blas::gemm<T>(false, true, B, d.c, C, T(1), gt, C, vs, C, T(0), out, d.c);
      });
    }
  }

  static void forward(const OpCall<T>& c) {
    const Dims d = dims_of(c.x_shape, c.arity);
    if (d.vector()) return forward_vector(c, d);
    const std::int64_t B = d.B, bc = d.B * d.c;
    const T* th = t_hat(c, d);
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t rk = c.x_shape[1 + 3 * k].cols, ck = c.x_shape[2 + 3 * k].cols;
      const T *v = c.x[2 + 3 * k], *bias = c.x[3 + 3 * k];
      T* y = c.ys[k];
      blas::gemm<T>(false, false, rk * B, ck, d.c, T(1), th + off * bc, d.c, v, ck, T(0), y, ck);
      ops::add_bias(y, bias, B, rk, ck);
      off += rk;
    }
  }

  static void backward(const OpCall<T>& c) {
    const Dims d = dims_of(c.x_shape, c.arity);
    const std::int64_t B = d.B, bc = d.B * d.c;
    T *us = c.scratch, *h = us + d.r * d.R, *gus = h + d.R * bc, *tmp = gus + d.r * d.R;
    T* vt = c.scratch + t_hat_offset(d) + d.R * bc;
    // A fresh U, V or B gradient (one that is not a parameter) is zeroed, then accumulated into.
    for (int a = 1; a < c.arity; ++a)
      if (c.fresh(a) && c.grad_x[a]) std::fill_n(c.grad_x[a], c.x_shape[a].numel(), T(0));
    if (d.vector()) return backward_vector(c, d);
    bool any_v = false;
    for (std::int64_t k = 0; k < d.K; ++k) any_v = any_v || c.grad_x[2 + 3 * k];
    const T* th = c.saved ? c.saved : any_v ? t_hat(c, d) : nullptr;  // t_hat stacks U_s too
    if (c.saved || !any_v) stack_u(c, d, us);
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t rk = c.x_shape[1 + 3 * k].cols, ck = c.x_shape[2 + 3 * k].cols;
      const T *v = c.x[2 + 3 * k], *g = c.grad_ys[k], *tk = th ? th + off * bc : nullptr;
      if (T* gv = c.grad_x[2 + 3 * k]) blas::gemm<T>(true, false, d.c, ck, rk * B, T(1), tk, d.c, g, ck, T(1), gv, ck);
      if (T* gb = c.grad_x[3 + 3 * k]) ops::add_bias_grad(gb, g, B, rk, ck);
      ops::times_vt(rk * B, g, v, d.c, ck, vt, h + off * bc);  // Ĥ_k = Ĝ_k V_kᵀ
      off += rk;
    }
    // grad_U_s = X̂ Ĥᵀ, split into the grad_U_k
    blas::gemm<T>(false, true, d.r, d.R, bc, T(1), c.x[0], bc, h, bc, T(0), gus, d.R);
    off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t rk = c.x_shape[1 + 3 * k].cols;
      if (T* gu = c.grad_x[1 + 3 * k]) ops::move_columns<true>(gus + off, d.R, gu, rk, d.r, rk);
      off += rk;
    }
    // grad_X̂ += U_s Ĥ, with β = 0 (into a fresh gradient, or into scratch and then added)
    if (T* gx = c.grad_x[0]) {
      ops::add_product(gx, c.fresh(0), d.r * bc, tmp, [&](T* out) {
        blas::gemm<T>(false, false, d.r, bc, d.R, T(1), us, d.R, h, bc, T(0), out, bc);
      });
    }
  }
};

Flops flops(const Shape* x, int arity, const Shape&, const OpAttrs& attrs) {
  const Dims d = dims_of(x, arity);
  if (d.vector()) {
    const double z_hat = 2.0 * double(d.B * d.c * d.C), f = z_hat + 2.0 * double(d.B * d.C);
    return {f, 2.0 * f + (attrs.i[0] ? z_hat : 0.0)};
  }
  const double t_hat = 2.0 * double(d.R * d.B * d.c * d.r);  // again in backward when recomputed
  double f = t_hat;
  for (std::int64_t k = 0; k < d.K; ++k) {
    const double rk = double(x[1 + 3 * k].cols), ck = double(x[2 + 3 * k].cols);
    f += 2.0 * rk * double(d.B) * double(d.c) * ck + rk * double(d.B) * ck;
  }
  return {f, 2.0 * f + (attrs.i[0] ? t_hat : 0.0)};
}
constexpr OpDef kOp = as_gemm(make_op<ProjectionsKernel>("projections", flops, /*assigns_fresh=*/true));
}  // namespace

void projections(Var x, std::span<const Projection> p, std::span<Var> out) {
  const char* op = "projections";
  if (p.empty() || p.size() > Tape::kMaxOutputs)
    throw Error(fmt::format("{}: between 1 and {} projections, got {}", op, Tape::kMaxOutputs, p.size()));
  if (out.size() != p.size())
    throw Error(fmt::format("{}: room for {} outputs, given {}", op, p.size(), out.size()));
  const Shape& xs = x.shape();
  if (xs.slots != 1) ops::shape_error(op, "x must be a batch of matrices [B,r,c], not a memory", x);
  std::array<Var, 1 + 3 * Tape::kMaxOutputs> in;
  std::array<Shape, Tape::kMaxOutputs> shapes;
  in[0] = x;
  std::int64_t max_cols = 0;
  Dims d{std::int64_t(p.size()), xs.batch, xs.rows, xs.cols, 0, 0};
  for (std::size_t k = 0; k < p.size(); ++k) {
    const Projection& q = p[k];
    ops::same_tape(op, x, q.u);
    ops::same_tape(op, x, q.v);
    ops::same_tape(op, x, q.b);
    const Shape &u = q.u.shape(), &v = q.v.shape(), &b = q.b.shape();
    if (u.batch != 1 || u.slots != 1 || u.rows != xs.rows)
      ops::shape_error(op, "each U must be a parameter [r,r'] with r the rows of x", x, q.u);
    if (v.batch != 1 || v.slots != 1 || v.rows != xs.cols)
      ops::shape_error(op, "each V must be a parameter [c,c'] with c the cols of x", x, q.v);
    if (b != parameter(u.cols, v.cols))
      throw ShapeError(fmt::format("{}: bias {} must be [1,{},{}] for U {} and V {}", op, b.str(), u.cols, v.cols,
                                   u.str(), v.str()));
    in[1 + 3 * k] = q.u, in[2 + 3 * k] = q.v, in[3 + 3 * k] = q.b;
    shapes[k] = matrices(xs.batch, u.cols, v.cols);
    d.R += u.cols, d.C += v.cols;
    max_cols = std::max(max_cols, v.cols);
  }
  const bool recompute = x.tape->recompute_saved();  // T̂ (Ẑ) saved, or recomputed (Tape::recompute_saved)
  OpAttrs attrs;
  attrs.i[0] = recompute;  // for flops()
  x.tape->apply(kOp, std::span<const Var>(in.data(), 1 + 3 * p.size()), std::span<const Shape>(shapes.data(), p.size()),
                out, attrs, recompute ? 0 : saved_size(d), scratch_size(d, max_cols));
}

OpEntry projections_entry() {
  return {"projections", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"X", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
                             {"U1", random_tensor(rng, parameter(d.rows, d.rows2))},
                             {"V1", random_tensor(rng, parameter(d.cols, d.cols2))},
                             {"B1", random_tensor(rng, parameter(d.rows2, d.cols2))},
                             {"U2", random_tensor(rng, parameter(d.rows, 1))},
                             {"V2", random_tensor(rng, parameter(d.cols, d.cols2))},
                             {"B2", random_tensor(rng, parameter(1, d.cols2))}};
            // One output that depends on both: Y_1 ⊙ Y_2 (Y_2's one row broadcast over Y_1's).
            sample.apply = [](Tape&, std::span<const Var> x) {
              const std::array<Projection, 2> p{Projection{x[1], x[2], x[3]}, Projection{x[4], x[5], x[6]}};
              std::array<Var, 2> out;
              projections(x[0], p, out);
              return hadamard(out[0], out[1]);
            };
            return sample;
          }};
}

}  // namespace matmem
