// bilinear and mat: the bilinear maps every matrix layer is built from (001 eqs. 3, 6).
//
//   mat(P_1..P_k; θ) = Σ_t U_tᵀ P_t V_t + B,   P_t:[B,r_t,c_t], U_t:[r_t,r'], V_t:[c_t,c'], B:[r',c'] -> [B,r',c']
//   bilinear(P, U, V) = Uᵀ P V is mat with one term and no bias.
//
// In matmem's layout (runtime/shape.hpp) a batch P is one r x (B c) matrix P̂ = [P_1 | ... | P_B], so per term
//   Q̂ = P̂ V  as the (r B) x c matrix times V        -> (r B) x c'   (one GEMM)
//   Ŷ += Uᵀ Q̂ as r' x r times the r x (B c') matrix  -> r' x (B c')  (one GEMM)
// and with Ĝ the upstream gradient (r' x B c') and Ĥ = U Ĝ (r x B c'):
//   grad_U += Q̂ Ĝᵀ,   grad_P̂ += Ĥ Vᵀ (as (r B) x c'),   grad_V += P̂ᵀ Ĥ (as (r B) x c),   grad_B += Σ_b G_b.
// Or, associating the other way ("U first"):
//   T̂ = Uᵀ P̂  as r' x r times r x (B c)               -> r' x (B c)    (one GEMM)
//   Ŷ += T̂ V  as the (r' B) x c matrix times V        -> (r' B) x c'
//             (after the first term: T̂ V into scratch with β = 0, then added to Ŷ. OpenBLAS 0.3.21 runs this
//             tall, narrow NN GEMM 2–3x slower with β = 1: in the NTM controller's mat, 240 x 15 x 6 took
//             3.0 µs with β = 1 and 1.1 µs with β = 0, 240 x 15 x 15 4.3 and 2.5 µs; the add is ~0.1 µs)
// and with Ĥ = Ĝ Vᵀ ((r' B) x c, through a transposed copy of V so the GEMM is NN):
//   grad_V += T̂ᵀ Ĝ,   grad_U += P̂ Ĥᵀ (over B c),   grad_P̂ += U Ĥ.
// Each term takes the order with fewer FLOPs, U first on a tie: V first costs r B c'(c + r'), U first
// r' B c (r + c'). The NTM's heads project a 15x15 state to 1x1 … 6x6 outputs, where U first is 1.6–3.5x
// faster with OpenBLAS (its V-first GEMMs are (r B) x c' with r B = 240 rows and c' ≤ 6, a shape it runs
// at a few GFLOP/s).
// Whatever the batch size, a term costs two GEMMs forward and at most four backward, or five when Q̂ (or
// T̂) is not saved but recomputed in backward with forward's first GEMM. That is the choice on a tape whose
// passes outgrow the cache (Tape::recompute_saved), where a saved Q̂ is written out and read back from
// memory (27 x 240 floats per call for the NTM controller's first layer) and the GEMM costs less than that
// traffic; on a small tape it would only add the GEMM (measured in the commit that made the choice). Not where
// the buffer is far smaller than the weights the GEMM reads again (a vector map at batch 1: ops::recomputes).
//
// Stacked (several terms, see stacked() for when): every term V first, the Q̂_t = P̂_t V_t ((r_t B) x c',
// one GEMM each) written into consecutive row blocks of one Q̂ = [Q̂_1; Q̂_2; ...] ((Σ r_t) x (B c'), saved or
// in scratch),
// and with U_stack = [U_1; U_2; ...] ((Σ r_t) x r', copied into scratch)
//   Ŷ = U_stackᵀ Q̂                                   (one GEMM for all terms)
// and backward
//   Ĥ = U_stack Ĝ  ((Σ r_t) x (B c'), one GEMM; its row blocks are the Ĥ_t),
//   grad U_stack = Q̂ Ĝᵀ (Q̂ saved or recomputed; one GEMM into scratch, its row blocks added to each grad_U_t),
//   per term grad_P̂_t += Ĥ_t V_tᵀ (NN through a transposed copy of a small V_t, β = 0 straight into a fresh
//   grad_P̂_t or into scratch and then added, as per term (add_product): the NT GEMM with β = 1 ran
//   240 x 15 x 15 in 4.2 µs, NN with β = 0 in 1.5), grad_V_t += P̂_tᵀ Ĥ_t.
// k terms: k + 1 GEMMs forward, at most 2 k + 2 backward (3 terms: 4 and 8 instead of 6 and 12), k more
// when Q̂ is recomputed.
#include <algorithm>
#include <array>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/bilinear.hpp"
#include "matmem/runtime/blas.hpp"

namespace matmem {
namespace {
using ops::add_product;
using ops::kTransposeV;

constexpr std::size_t kMaxTerms = 21;  // 3 k + 1 inputs must fit the tape's 64

bool u_first(std::int64_t r, std::int64_t c, std::int64_t rp, std::int64_t cp) {
  return rp * c * (r + cp) <= r * cp * (c + rp);
}
// Saved per term: Q̂ (r B c', V first) or T̂ (r' B c, U first). Scratch for backward: Ĥ, and Vᵀ (U first).
std::int64_t term_saved(const Shape& p, const Shape& y) {
  return u_first(p.rows, p.cols, y.rows, y.cols) ? y.rows * y.batch * p.cols : p.rows * y.batch * y.cols;
}
// Scratch for backward: Ĥ, Vᵀ (if small) and grad_P̂'s product before it is added (r B c).
std::int64_t term_scratch(const Shape& p, const Shape& y) {
  const bool vt = p.cols * y.cols <= kTransposeV;
  const std::int64_t h = u_first(p.rows, p.cols, y.rows, y.cols) ? y.rows * y.batch * p.cols : p.rows * y.batch * y.cols;
  return h + (vt ? p.cols * y.cols : 0) + p.rows * y.batch * p.cols;
}

// Stack the terms (all V first, one shared Uᵀ GEMM; see the header) when there are at least two, V first for
// all costs at most kStackFlops times the FLOPs of each term's cheaper order, and every term that would be
// U first on its own is small (kStackWork) and has at least kStackCols output columns. Measured with
// OpenBLAS 0.3.21, fwd+bwd (stacked / per term): ctrl 6x5, 6x6, 15x15 -> 15x15 at batch 16 0.85, two
// 15x15 -> 15x15 0.96, two 15x15 -> 6x5-ish outputs (all V first anyway) 0.79; but switching U-first
// terms to V first loses for narrow outputs (two 15x15 -> 8x8 1.11, -> 1x1 2.0) and for large terms
// (two 30x30 -> 30x30, 864k multiply-adds each: 1.31), where the merged GEMMs save nothing.
constexpr double kStackFlops = 1.25;
constexpr std::int64_t kStackCols = 14;
constexpr std::int64_t kStackWork = std::int64_t(1) << 19;
bool stacked(const Shape* x, int arity, const Shape& y) {
  const int terms = arity / 3;
  if (terms < 2) return false;
  double v_first = 0, best = 0;
  for (int t = 0; t < terms; ++t) {
    const std::int64_t r = x[3 * t].rows, c = x[3 * t].cols, rp = y.rows, cp = y.cols;
    const std::int64_t vf = r * cp * (c + rp), uf = rp * c * (r + cp);
    v_first += double(vf);
    if (u_first(r, c, rp, cp)) {
      if (cp < kStackCols || vf * y.batch > kStackWork) return false;
      best += double(uf);
    } else {
      best += double(vf);
    }
  }
  return v_first <= kStackFlops * best;
}
// Σ r_t: the rows of U_stack and of Q.
std::int64_t stacked_rows(const Shape* x, int arity) {
  std::int64_t rows = 0;
  for (int t = 0; t < arity / 3; ++t) rows += x[3 * t].rows;
  return rows;
}
// Where Q̂ / T̂ go in scratch when they are not saved (forward writes them here, backward recomputes them;
// see the header). Stacked: U_stack and grad U_stack (R r' each), Ĥ (R B c'), Vᵀ, grad_P̂'s product (max r_t B c_t),
// then Q (R B c'). Per term: the largest term's backward scratch (or, forward, a later U-first term's
// product before it is added), then one term's Q̂ or T̂.
std::int64_t q_offset(const Shape* x, int arity, const Shape& y) {
  std::int64_t off = 0;
  if (stacked(x, arity, y)) {
    std::int64_t tmp = 0;
    for (int t = 0; t < arity / 3; ++t) tmp = std::max(tmp, x[3 * t].rows * y.batch * x[3 * t].cols);
    const std::int64_t R = stacked_rows(x, arity);
    return 2 * R * y.rows + R * y.batch * y.cols + kTransposeV + tmp;
  }
  for (int t = 0; t < arity / 3; ++t) {
    const Shape& p = x[3 * t];
    off = std::max(off, term_scratch(p, y));
    if (t > 0 && u_first(p.rows, p.cols, y.rows, y.cols)) off = std::max(off, y.numel());
  }
  return off;
}
// The saved buffer when Q̂ / T̂ are saved: Q (stacked), or every term's in turn.
std::int64_t saved_size(const Shape* x, int arity, const Shape& y) {
  if (stacked(x, arity, y)) return stacked_rows(x, arity) * y.batch * y.cols;
  std::int64_t saved = 0;
  for (int t = 0; t < arity / 3; ++t) saved += term_saved(x[3 * t], y);
  return saved;
}
// The weights the first-stage GEMMs read (V_t where V first, as every stacked term, U_t where U first): what a
// recomputation of Q̂ / T̂ reads again (ops::recomputes).
std::int64_t first_stage_weights(const Shape* x, int arity, const Shape& y) {
  const bool all_v = stacked(x, arity, y);
  std::int64_t n = 0;
  for (int t = 0; t < arity / 3; ++t) {
    const Shape& p = x[3 * t];
    n += !all_v && u_first(p.rows, p.cols, y.rows, y.cols) ? p.rows * y.rows : p.cols * y.cols;
  }
  return n;
}
std::int64_t scratch_size(const Shape* x, int arity, const Shape& y) {
  std::int64_t q = 0;
  if (stacked(x, arity, y)) q = stacked_rows(x, arity) * y.batch * y.cols;
  else
    for (int t = 0; t < arity / 3; ++t) q = std::max(q, term_saved(x[3 * t], y));
  return q_offset(x, arity, y) + q;
}

template <class T>
struct BilinearKernel {
  // out = U x for a U-first term's products with U (r x r'): Uᵀ P̂ forward (U transposed), U Ĥ backward. With
  // r = r' = 1 (a vector map, U one number u) a scaling: at batch 1 a GEMM call costs more than its c multiplies.
  static void times_u(bool transposed, const T* u, std::int64_t r, std::int64_t rp, const T* x, std::int64_t n, T* out) {
    if (r == 1 && rp == 1) {
      for (std::int64_t k = 0; k < n; ++k) out[k] = u[0] * x[k];
    } else if (transposed) {
      blas::gemm<T>(true, false, rp, n, r, T(1), u, rp, x, n, T(0), out, n);
    } else {
      blas::gemm<T>(false, false, r, n, rp, T(1), u, rp, x, n, T(0), out, n);
    }
  }

  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, rp = c.y_shape.rows, cp = c.y_shape.cols;
    const int terms = c.arity / 3;
    if (stacked(c.x_shape, c.arity, c.y_shape)) {
      forward_stacked(c);
      add_bias(c);
      return;
    }
    T* saved = c.saved;  // nullptr: Q̂ or T̂ go to scratch and backward recomputes them
    T* const qs = c.scratch + q_offset(c.x_shape, c.arity, c.y_shape);
    for (int t = 0; t < terms; ++t) {
      const Shape& ps = c.x_shape[3 * t];
      const std::int64_t r = ps.rows, cc = ps.cols;
      const T *p = c.x[3 * t], *u = c.x[3 * t + 1], *v = c.x[3 * t + 2];
      const T beta = t == 0 ? T(0) : T(1);
      T* q = saved ? saved : qs;
      if (u_first(r, cc, rp, cp)) {
        times_u(true, u, r, rp, p, B * cc, q);
        T* yt = t == 0 ? c.y : c.scratch;
        blas::gemm<T>(false, false, rp * B, cp, cc, T(1), q, cc, v, cp, T(0), yt, cp);
        if (t > 0)
          for (std::int64_t k = 0; k < rp * B * cp; ++k) c.y[k] += yt[k];
      } else {
        blas::gemm<T>(false, false, r * B, cp, cc, T(1), p, cc, v, cp, T(0), q, cp);
        blas::gemm<T>(true, false, rp, B * cp, r, T(1), u, rp, q, B * cp, beta, c.y, B * cp);
      }
      if (saved) saved += term_saved(ps, c.y_shape);
    }
    add_bias(c);
  }

  static void add_bias(const OpCall<T>& c) {
    if (c.arity % 3 != 1) return;  // bias [r',c'] over the batch
    ops::add_bias(c.y, c.x[c.arity - 1], c.y_shape.batch, c.y_shape.rows, c.y_shape.cols);
  }

  // U_stack = [U_1; U_2; ...] into scratch; returns its rows.
  static std::int64_t stack_u(const OpCall<T>& c, T* us) {
    const std::int64_t rp = c.y_shape.rows;
    std::int64_t rows = 0;
    for (int t = 0; t < c.arity / 3; ++t) {
      const std::int64_t n = c.x_shape[3 * t].rows * rp;
      std::copy(c.x[3 * t + 1], c.x[3 * t + 1] + n, us + rows * rp);
      rows += c.x_shape[3 * t].rows;
    }
    return rows;
  }

  // Q_t = P̂_t V_t into consecutive row blocks of Q (saved, or in scratch when recomputed; returned).
  static T* stacked_q(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, cp = c.y_shape.cols;
    T* const q0 = c.saved ? c.saved : c.scratch + q_offset(c.x_shape, c.arity, c.y_shape);
    T* q = q0;
    for (int t = 0; t < c.arity / 3; ++t) {
      const std::int64_t r = c.x_shape[3 * t].rows, cc = c.x_shape[3 * t].cols;
      blas::gemm<T>(false, false, r * B, cp, cc, T(1), c.x[3 * t], cc, c.x[3 * t + 2], cp, T(0), q, cp);
      q += r * B * cp;
    }
    return q0;
  }

  // Q as above, then Ŷ = U_stackᵀ Q.
  static void forward_stacked(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, rp = c.y_shape.rows, cp = c.y_shape.cols;
    T* us = c.scratch;
    const std::int64_t R = stack_u(c, us);
    const T* q = stacked_q(c);
    blas::gemm<T>(true, false, rp, B * cp, R, T(1), us, rp, q, B * cp, T(0), c.y, B * cp);
  }

  // Ĥ = U_stack Ĝ (row blocks Ĥ_t), grad U_stack = Q Ĝᵀ (added block by block), then per term
  // grad_P̂_t = Ĥ_t V_tᵀ (fresh) or += (live) and grad_V_t += P̂_tᵀ Ĥ_t. Fresh U and V gradients were zeroed.
  static void backward_stacked(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, rp = c.y_shape.rows, cp = c.y_shape.cols;
    const int terms = c.arity / 3;
    const T* g = c.grad_y;
    bool any_u = false, any_pv = false;
    for (int t = 0; t < terms; ++t) {
      any_u = any_u || c.grad_x[3 * t + 1];
      any_pv = any_pv || c.grad_x[3 * t] || c.grad_x[3 * t + 2];
    }
    const std::int64_t R = stacked_rows(c.x_shape, c.arity);
    T *us = c.scratch, *h = us + R * rp, *gus = h + R * B * cp, *vt = gus + R * rp, *tmp = vt + kTransposeV;
    if (any_u) {
      const T* q = c.saved ? c.saved : stacked_q(c);
      blas::gemm<T>(false, true, R, rp, B * cp, T(1), q, B * cp, g, B * cp, T(0), gus, rp);
      const T* src = gus;
      for (int t = 0; t < terms; ++t) {
        const std::int64_t n = c.x_shape[3 * t].rows * rp;
        if (T* gu = c.grad_x[3 * t + 1])
          for (std::int64_t k = 0; k < n; ++k) gu[k] += src[k];
        src += n;
      }
    }
    if (!any_pv) return;
    stack_u(c, us);
    blas::gemm<T>(false, false, R, B * cp, rp, T(1), us, rp, g, B * cp, T(0), h, B * cp);
    for (int t = 0; t < terms; ++t) {
      const std::int64_t r = c.x_shape[3 * t].rows, cc = c.x_shape[3 * t].cols;
      const T *p = c.x[3 * t], *v = c.x[3 * t + 2];
      T *gp = c.grad_x[3 * t], *gv = c.grad_x[3 * t + 2];
      if (gp)  // Ĥ_t Vᵀ_t with β = 0 (NN through a transposed copy of a small V), into a fresh grad_P̂_t or added
        add_product(gp, c.fresh(3 * t), r * B * cc, tmp, [&](T* out) { ops::times_vt(r * B, h, v, cc, cp, vt, out); });
      if (gv) ops::add_at_b(c, 3 * t + 2, gv, p, h, r * B, cc, cp);
      h += r * B * cp;
    }
  }

  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, rp = c.y_shape.rows, cp = c.y_shape.cols;
    const int terms = c.arity / 3;
    const T* g = c.grad_y;
    // A fresh grad_P̂ is assigned below; a fresh U, V or bias gradient (a U that is not a parameter, say)
    // is zeroed here and accumulated into like any other.
    for (int k = 0; k < c.arity; ++k)
      if (c.fresh(k) && (k % 3 != 0 || k == c.arity - 1) && c.grad_x[k])
        std::fill_n(c.grad_x[k], c.x_shape[k].numel(), T(0));
    if (stacked(c.x_shape, c.arity, c.y_shape)) {
      backward_stacked(c);
      bias_grad(c);
      return;
    }
    T* saved = c.saved;  // nullptr: each term's T̂ or Q̂ is recomputed into qs
    T* const qs = c.scratch + q_offset(c.x_shape, c.arity, c.y_shape);
    for (int t = 0; t < terms; ++t) {
      const Shape& ps = c.x_shape[3 * t];
      const std::int64_t r = ps.rows, cc = ps.cols;
      const T *p = c.x[3 * t], *u = c.x[3 * t + 1], *v = c.x[3 * t + 2];
      T *gp = c.grad_x[3 * t], *gu = c.grad_x[3 * t + 1], *gv = c.grad_x[3 * t + 2];
      const bool small_v = cc * cp <= kTransposeV, fresh_p = c.fresh(3 * t);
      if (u_first(r, cc, rp, cp)) {
        T *h = c.scratch, *vt = h + rp * B * cc, *tmp = vt + (small_v ? cc * cp : 0);
        if (gv) {
          const T* tq = saved ? saved : qs;
          if (!saved) times_u(true, u, r, rp, p, B * cc, qs);  // T̂
          ops::add_at_b(c, 3 * t + 2, gv, tq, g, rp * B, cc, cp);
        }
        if (gu || gp) ops::times_vt(rp * B, g, v, cc, cp, vt, h);
        if (gu && r == 1 && rp == 1) {  // <P̂, Ĥ>
          T dot = 0;
          for (std::int64_t k = 0; k < B * cc; ++k) dot += p[k] * h[k];
          gu[0] += dot;
        } else if (gu) {
          blas::gemm<T>(false, true, r, rp, B * cc, T(1), p, B * cc, h, B * cc, T(1), gu, rp);
        }
        if (gp) add_product(gp, fresh_p, r * B * cc, tmp, [&](T* out) { times_u(false, u, r, rp, h, B * cc, out); });
      } else {
        T *h = c.scratch, *vt = h + r * B * cp, *tmp = vt + (small_v ? cc * cp : 0);
        if (gu) {
          const T* q = saved ? saved : qs;
          if (!saved) blas::gemm<T>(false, false, r * B, cp, cc, T(1), p, cc, v, cp, T(0), qs, cp);  // Q̂
          blas::gemm<T>(false, true, r, rp, B * cp, T(1), q, B * cp, g, B * cp, T(1), gu, rp);
        }
        if (gp || gv) blas::gemm<T>(false, false, r, B * cp, rp, T(1), u, rp, g, B * cp, T(0), h, B * cp);
        if (gp)
          add_product(gp, fresh_p, r * B * cc, tmp, [&](T* out) { ops::times_vt(r * B, h, v, cc, cp, vt, out); });
        if (gv) ops::add_at_b(c, 3 * t + 2, gv, p, h, r * B, cc, cp);
      }
      if (saved) saved += term_saved(ps, c.y_shape);
    }
    bias_grad(c);
  }

  static void bias_grad(const OpCall<T>& c) {
    if (c.arity % 3 == 1 && c.grad_x[c.arity - 1])
      ops::add_bias_grad(c.grad_x[c.arity - 1], c.grad_y, c.y_shape.batch, c.y_shape.rows, c.y_shape.cols);
  }
};

// Backward: twice forward's GEMMs, plus forward's first-stage GEMMs again when Q̂ or T̂ are recomputed.
Flops flops(const Shape* x, int arity, const Shape& y, const OpAttrs& attrs) {
  double f = 0, first = 0;
  const bool stack = stacked(x, arity, y);
  for (int t = 0; t < arity / 3; ++t) {
    const Shape& p = x[3 * t];
    const double r = double(p.rows), c = double(p.cols), rp = double(y.rows), cp = double(y.cols), B = double(y.batch);
    const bool uf = !stack && u_first(p.rows, p.cols, y.rows, y.cols);
    f += 2.0 * B * (uf ? rp * c * (r + cp) : r * cp * (c + rp));
    first += 2.0 * B * (uf ? rp * c * r : r * cp * c);
  }
  if (arity % 3 == 1) f += double(y.numel());
  return {f, 2.0 * f + (attrs.i[0] ? first : 0.0)};
}

constexpr OpDef kBilinear = as_gemm(make_op<BilinearKernel>("bilinear", flops, /*assigns_fresh=*/true));
constexpr OpDef kMat = as_gemm(make_op<BilinearKernel>("mat", flops, /*assigns_fresh=*/true));

bool is_parameter_matrix(const Shape& s) { return s.batch == 1 && s.slots == 1; }

Var apply_terms(const OpDef& op, std::span<const MatTerm> terms, Var bias) {
  const char* name = op.name;
  if (terms.empty()) throw Error(fmt::format("{}: needs at least one term", name));
  if (terms.size() > kMaxTerms) throw Error(fmt::format("{}: {} terms, at most {}", name, terms.size(), kMaxTerms));
  const Var first = terms[0].p;
  ops::same_tape(name, first, terms[0].u);
  const Shape out = matrices(first.shape().batch, terms[0].u.shape().cols, terms[0].v.valid() ? terms[0].v.shape().cols : 0);
  std::array<Var, 3 * kMaxTerms + 1> in;
  std::array<Shape, 3 * kMaxTerms + 1> shapes;
  std::size_t n = 0;
  for (const MatTerm& t : terms) {
    ops::same_tape(name, first, t.p);
    ops::same_tape(name, t.p, t.u);
    ops::same_tape(name, t.p, t.v);
    const Shape &p = t.p.shape(), &u = t.u.shape(), &v = t.v.shape();
    if (p.slots != 1) ops::shape_error(name, "P must be a batch of matrices [B,r,c], not a memory", t.p);
    if (!is_parameter_matrix(u)) ops::shape_error(name, "U must be a matrix [r,r'] shared over the batch", t.p, t.u);
    if (!is_parameter_matrix(v)) ops::shape_error(name, "V must be a matrix [c,c'] shared over the batch", t.p, t.v);
    if (u.rows != p.rows) ops::shape_error(name, "U's rows must equal P's rows (Uᵀ P)", t.p, t.u);
    if (v.rows != p.cols) ops::shape_error(name, "V's rows must equal P's cols (P V)", t.p, t.v);
    if (p.batch != out.batch) ops::shape_error(name, "every P must have the same batch", first, t.p);
    if (u.cols != out.rows || v.cols != out.cols)
      throw ShapeError(fmt::format("{}: every term must give {}; U {} and V {} give [{},{}]", name, out.str(), u.str(),
                                   v.str(), u.cols, v.cols));
    shapes[n] = p, shapes[n + 1] = u, shapes[n + 2] = v;
    in[n++] = t.p;
    in[n++] = t.u;
    in[n++] = t.v;
  }
  if (bias.valid()) {
    ops::same_tape(name, first, bias);
    if (bias.shape() != parameter(out.rows, out.cols))
      throw ShapeError(fmt::format("{}: bias {} must be [1,{},{}] for output {}", name, bias.shape().str(), out.rows,
                                   out.cols, out.str()));
    in[n++] = bias;
  }
  const int arity = int(3 * terms.size());
  const std::int64_t saved = saved_size(shapes.data(), arity, out);
  const bool recompute = ops::recomputes(*first.tape, saved, first_stage_weights(shapes.data(), arity, out));
  OpAttrs attrs;
  attrs.i[0] = recompute;  // for flops()
  return first.tape->apply(op, std::span<const Var>(in.data(), n), out, attrs,
                           recompute ? 0 : saved, scratch_size(shapes.data(), arity, out));
}

}  // namespace

Var bilinear(Var p, Var u, Var v) {
  const MatTerm t{p, u, v};
  return apply_terms(kBilinear, {&t, 1}, Var{});
}
Var mat(std::span<const MatTerm> terms, Var bias) { return apply_terms(kMat, terms, bias); }
Var mat(std::initializer_list<MatTerm> terms, Var bias) {
  return apply_terms(kMat, std::span<const MatTerm>(terms.begin(), terms.size()), bias);
}

OpEntry bilinear_entry() {
  return {"bilinear", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"P", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
                             {"U", random_tensor(rng, parameter(d.rows, d.rows2))},
                             {"V", random_tensor(rng, parameter(d.cols, d.cols2))}};
            sample.apply = [](Tape&, std::span<const Var> x) { return bilinear(x[0], x[1], x[2]); };
            return sample;
          }};
}

OpEntry mat_entry() {
  return {"mat", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"P1", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
                             {"U1", random_tensor(rng, parameter(d.rows, d.rows2))},
                             {"V1", random_tensor(rng, parameter(d.cols, d.cols2))},
                             {"P2", random_tensor(rng, matrices(d.batch, d.rows2 + 1, d.cols + 2))},
                             {"U2", random_tensor(rng, parameter(d.rows2 + 1, d.rows2))},
                             {"V2", random_tensor(rng, parameter(d.cols + 2, d.cols2))},
                             {"B", random_tensor(rng, parameter(d.rows2, d.cols2))}};
            sample.apply = [](Tape&, std::span<const Var> x) {
              return mat({{x[0], x[1], x[2]}, {x[3], x[4], x[5]}}, x[6]);
            };
            return sample;
          }};
}

}  // namespace matmem
