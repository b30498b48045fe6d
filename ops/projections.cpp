// projections: several bilinear maps of one input, as one op with one output each.
//   Y_k = U_kᵀ X V_k + B_k,   X:[B,r,c], U_k:[r,r'_k], V_k:[c,c'_k], B_k:[r'_k,c'_k] -> Y_k:[B,r'_k,c'_k], k = 1..K
// Equal to K single-term mat calls (ops/bilinear.cpp, whose layout notes apply: X̂ is r x (B c)), but the
// K first-stage GEMMs Uᵀ X̂ are one, with the U's side by side in U_s = [U_1 | … | U_K] (r x R', R' = Σ r'_k:
// stack_columns of the U_k, an input of the op):
//   T̂ = U_sᵀ X̂ (R' x B c; its row block k is T̂_k),   Ŷ_k = T̂_k V_k (as (r'_k B) x c times c x c'_k)
// and backward, with Ĥ_k = Ĝ_k V_kᵀ stacked into Ĥ (R' x B c):
//   grad_V_k += T̂_kᵀ Ĝ_k,   grad_B_k += Σ_b G_k,   grad_U_s += X̂ Ĥᵀ,   grad_X̂ += U_s Ĥ
// so K projections cost K + 1 GEMMs forward and 2K + 2 backward instead of 2K and 4K, one more when T̂ is
// recomputed rather than saved (on a tape whose passes outgrow the cache, Tape::recompute_saved, when T̂ is
// not far smaller than U_s: ops::recomputes; as in mat).
// projections() stacks U_s for its one call; a model projecting one state at every time step stacks it once a
// pass (Step::projections), so the U_k are copied once a pass and their gradients, summed over the time steps
// in grad_U_s (each step's term formed apart and then added, in the order of the steps' backward: the sums of
// splitting at every step, bit for bit), split once (Graves' priority sort in matrix form at batch 1: 4.32 ->
// 4.02 ms a step).
// Every term is associated U first, the cheaper order when the outputs are smaller than X (the NTM heads'
// 1x1 … 6x6 projections of a 15x15 state).
// The vector form (r = 1 and every U_k 1x1, its one value u_k: a vector model's heads, X̂ a B x c matrix) is
// associated V first instead: U first would write K scaled copies of X̂ (K x B c) and read them back (Graves'
// priority-sort controller of 512 units at batch 16, 16 maps a call: 512 KiB a call, where Ẑ below is about 8).
// It is its own op, stacked_projections, on V_s = [V_1 | … | V_K] (c x C, C = Σ c'_k: stack_columns of the
// V_k, ops/stack_columns.cpp):
//   Ẑ = X̂ V_s (B x C; its column block k is Z_k = X̂ V_k),   Y_k = u_k Z_k + B_k
// and backward, with G̃ = [u_1 G_1 | … | u_K G_K] (B x C):
//   grad_u_k += <Z_k, G_k>_F,   grad_B_k += Σ_b G_k,   grad_V_s += X̂ᵀ G̃,   grad_X̂ += G̃ V_sᵀ
// one GEMM forward and two backward whatever K, one more when Ẑ (B x C, saved) is recomputed. projections()
// stacks V_s for its one call; a model projecting one state at every time step stacks it once a pass and
// calls stacked_projections at each (Step::projections), so the V_k are copied once a pass, not once a time
// step, and their gradients, summed over the time steps in grad_V_s, split once (Graves' priority sort at
// batch 1: the copies and splits were a third of the step). (One GEMM per V_k instead of the copy into V_s
// made that step slower: 18.8 against 14.3 ms of projections forward a step.) A test checks both forms
// against the separate mat calls in values and gradients, with T̂ (Ẑ) saved and recomputed, and gradchecks
// the vector form in float64 (the registry's samples draw both forms, each stack shared by two calls).
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

// Inputs: X (0), U_s (1), then V_k (2 + 2k) and B_k (3 + 2k); r'_k and c'_k from B_k.
struct Dims {
  std::int64_t K, B, r, c, R, C;  // R = Σ r'_k (U_s's columns), C = Σ c'_k
};
Dims dims_of(const Shape* x, int arity) {
  Dims d{(arity - 2) / 2, x[0].batch, x[0].rows, x[0].cols, x[1].cols, 0};
  for (std::int64_t k = 0; k < d.K; ++k) d.C += x[3 + 2 * k].cols;
  return d;
}
// scratch: Ĥ [R'·B·c], the product added to grad_U_s or to grad_X̂ [max(r·R', r·B·c)], T̂ [R'·B·c] (when it
// is not saved: forward writes it here and backward recomputes it, see Tape::recompute_saved), one Vᵀ
// [c·max c'_k].
std::int64_t product_size(const Dims& d) { return std::max(d.r * d.R, d.r * d.B * d.c); }
std::int64_t t_hat_offset(const Dims& d) { return d.R * d.B * d.c + product_size(d); }
std::int64_t saved_size(const Dims& d) { return d.R * d.B * d.c; }
std::int64_t scratch_size(const Dims& d, std::int64_t max_cols) {
  return t_hat_offset(d) + saved_size(d) + d.c * max_cols;
}

template <class T>
struct ProjectionsKernel {
  // T̂ = U_sᵀ X̂ into the saved buffer, or into scratch when it is recomputed.
  static T* t_hat(const OpCall<T>& c, const Dims& d) {
    const std::int64_t bc = d.B * d.c;
    T* t = c.saved ? c.saved : c.scratch + t_hat_offset(d);
    blas::gemm<T>(true, false, d.R, bc, d.r, T(1), c.x[1], d.R, c.x[0], bc, T(0), t, bc);
    return t;
  }

  static void forward(const OpCall<T>& c) {
    const Dims d = dims_of(c.x_shape, c.arity);
    const std::int64_t B = d.B, bc = d.B * d.c;
    const T* th = t_hat(c, d);
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t rk = c.x_shape[3 + 2 * k].rows, ck = c.x_shape[3 + 2 * k].cols;
      const T *v = c.x[2 + 2 * k], *bias = c.x[3 + 2 * k];
      T* y = c.ys[k];
      blas::gemm<T>(false, false, rk * B, ck, d.c, T(1), th + off * bc, d.c, v, ck, T(0), y, ck);
      ops::add_bias(y, bias, B, rk, ck);
      off += rk;
    }
  }

  static void backward(const OpCall<T>& c) {
    const Dims d = dims_of(c.x_shape, c.arity);
    const std::int64_t B = d.B, bc = d.B * d.c;
    T *h = c.scratch, *tmp = h + d.R * bc;
    T* vt = c.scratch + t_hat_offset(d) + d.R * bc;
    // A fresh V or B gradient (one that is not a parameter) is zeroed, then accumulated into.
    for (int a = 2; a < c.arity; ++a)
      if (c.fresh(a) && c.grad_x[a]) std::fill_n(c.grad_x[a], c.x_shape[a].numel(), T(0));
    bool any_v = false;
    for (std::int64_t k = 0; k < d.K; ++k) any_v = any_v || c.grad_x[2 + 2 * k];
    const T* th = c.saved ? c.saved : any_v ? t_hat(c, d) : nullptr;
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t rk = c.x_shape[3 + 2 * k].rows, ck = c.x_shape[3 + 2 * k].cols;
      const T *v = c.x[2 + 2 * k], *g = c.grad_ys[k], *tk = th ? th + off * bc : nullptr;
      if (T* gv = c.grad_x[2 + 2 * k]) blas::gemm<T>(true, false, d.c, ck, rk * B, T(1), tk, d.c, g, ck, T(1), gv, ck);
      if (T* gb = c.grad_x[3 + 2 * k]) ops::add_bias_grad(gb, g, B, rk, ck);
      ops::times_vt(rk * B, g, v, d.c, ck, vt, h + off * bc);  // Ĥ_k = Ĝ_k V_kᵀ
      off += rk;
    }
    // grad_U_s += X̂ Ĥᵀ and grad_X̂ += U_s Ĥ, each with β = 0 (into a fresh gradient, or into scratch and then
    // added): a U_s stacked once a pass sums every time step's term here, in the order the steps' backward runs.
    if (T* gu = c.grad_x[1]) {
      ops::add_product(gu, c.fresh(1), d.r * d.R, tmp, [&](T* out) {
        blas::gemm<T>(false, true, d.r, d.R, bc, T(1), c.x[0], bc, h, bc, T(0), out, d.R);
      });
    }
    if (T* gx = c.grad_x[0]) {
      ops::add_product(gx, c.fresh(0), d.r * bc, tmp, [&](T* out) {
        blas::gemm<T>(false, false, d.r, bc, d.R, T(1), c.x[1], d.R, h, bc, T(0), out, bc);
      });
    }
  }
};

// stacked_projections: inputs X (0), V_s (1), then u_k (2 + 2k) and B_k (3 + 2k); C'_k from B_k. Scratch: G̃
// [B·C], the product added to grad_V_s [c·C] or to grad_X̂ [B·c] (one after the other), Ẑ [B·C] (when it is
// not saved).
struct StackedDims {
  std::int64_t K, B, c, C;
  std::int64_t product() const { return std::max(c * C, B * c); }
};
StackedDims stacked_dims(const Shape* x, int arity) { return {(arity - 2) / 2, x[0].batch, x[0].cols, x[1].cols}; }
std::int64_t stacked_scratch(const StackedDims& d) { return 2 * d.B * d.C + d.product(); }

template <class T>
struct StackedProjectionsKernel {
  // Ẑ = X̂ V_s into the saved buffer, or into scratch when it is recomputed.
  static T* z_hat(const OpCall<T>& c, const StackedDims& d) {
    T* z = c.saved ? c.saved : c.scratch + d.B * d.C + d.product();
    blas::gemm<T>(false, false, d.B, d.C, d.c, T(1), c.x[0], d.c, c.x[1], d.C, T(0), z, d.C);
    return z;
  }
  static void forward(const OpCall<T>& c) {
    const StackedDims d = stacked_dims(c.x_shape, c.arity);
    const T* z = z_hat(c, d);
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t ck = c.x_shape[3 + 2 * k].cols;
      const T u = c.x[2 + 2 * k][0], *bias = c.x[3 + 2 * k];
      T* y = c.ys[k];
      for (std::int64_t b = 0; b < d.B; ++b)
        for (std::int64_t j = 0; j < ck; ++j) y[b * ck + j] = u * z[b * d.C + off + j] + bias[j];
      off += ck;
    }
  }
  static void backward(const OpCall<T>& c) {
    const StackedDims d = stacked_dims(c.x_shape, c.arity);
    const std::int64_t B = d.B, C = d.C;
    T *gt = c.scratch, *tmp = gt + B * C;
    // A fresh u or B gradient (one that is not a parameter) is zeroed, then accumulated into.
    for (int a = 2; a < c.arity; ++a)
      if (c.fresh(a) && c.grad_x[a]) std::fill_n(c.grad_x[a], c.x_shape[a].numel(), T(0));
    bool any_u = false;
    for (std::int64_t k = 0; k < d.K; ++k) any_u = any_u || c.grad_x[2 + 2 * k];
    const T* z = c.saved ? c.saved : any_u ? z_hat(c, d) : nullptr;
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < d.K; ++k) {
      const std::int64_t ck = c.x_shape[3 + 2 * k].cols;
      const T u = c.x[2 + 2 * k][0], *g = c.grad_ys[k];
      T acc = 0;
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0; j < ck; ++j) {
          gt[b * C + off + j] = u * g[b * ck + j];
          if (z) acc += z[b * C + off + j] * g[b * ck + j];
        }
      if (T* gu = c.grad_x[2 + 2 * k]) gu[0] += acc;
      if (T* gb = c.grad_x[3 + 2 * k]) ops::add_bias_grad(gb, g, B, 1, ck);
      off += ck;
    }
    if (T* gvs = c.grad_x[1]) {  // grad_V_s += X̂ᵀ G̃: at batch 1 left to the tape, one product over the unroll
      if (ops::defers(c, B, d.c, C)) {
        if (c.fresh(1)) std::fill_n(gvs, d.c * C, T(0));
        ops::add_at_b(c, 1, gvs, c.x[0], gt, B, d.c, C);
      } else {
        ops::add_product(gvs, c.fresh(1), d.c * C, tmp, [&](T* out) {
          blas::gemm<T>(true, false, d.c, C, B, T(1), c.x[0], d.c, gt, C, T(0), out, C);
        });
      }
    }
    if (T* gx = c.grad_x[0]) {  // grad_X̂ += G̃ V_sᵀ
      ops::add_product(gx, c.fresh(0), B * d.c, tmp, [&](T* out) {
        blas::gemm<T>(false, true, B, d.c, C, T(1), gt, C, c.x[1], C, T(0), out, d.c);
      });
    }
  }
};

Flops flops(const Shape* x, int arity, const Shape&, const OpAttrs& attrs) {
  const Dims d = dims_of(x, arity);
  const double t_hat = 2.0 * double(d.R * d.B * d.c * d.r);  // again in backward when recomputed
  double f = t_hat;
  for (std::int64_t k = 0; k < d.K; ++k) {
    const double rk = double(x[3 + 2 * k].rows), ck = double(x[3 + 2 * k].cols);
    f += 2.0 * rk * double(d.B) * double(d.c) * ck + rk * double(d.B) * ck;
  }
  return {f, 2.0 * f + (attrs.i[0] ? t_hat : 0.0)};
}
constexpr OpDef kOp = as_gemm(make_op<ProjectionsKernel>("projections", flops, /*assigns_fresh=*/true));
Flops stacked_flops(const Shape* x, int arity, const Shape&, const OpAttrs& attrs) {
  const StackedDims d = stacked_dims(x, arity);
  const double z_hat = 2.0 * double(d.B * d.c * d.C), f = z_hat + 2.0 * double(d.B * d.C);
  return {f, 2.0 * f + (attrs.i[0] ? z_hat : 0.0)};
}
constexpr OpDef kStackedOp =
    as_gemm(make_op<StackedProjectionsKernel>("stacked_projections", stacked_flops, /*assigns_fresh=*/true));
// The stacked forms' counts: K maps (1 to 16) of `what` (V's or u's), with as many biases and outputs.
void check_counts(const char* op, const char* what, std::size_t K, std::size_t biases, std::size_t outputs) {
  if (K == 0 || K > Tape::kMaxOutputs)
    throw Error(fmt::format("{}: between 1 and {} projections, got {}", op, Tape::kMaxOutputs, K));
  if (biases != K || outputs != K)
    throw Error(fmt::format("{}: {} {}, {} biases and room for {} outputs (need one each)", op, K, what, biases,
                            outputs));
}
}  // namespace

void projections(Var x, std::span<const Projection> p, std::span<Var> out) {
  const char* op = "projections";
  if (p.empty() || p.size() > Tape::kMaxOutputs)
    throw Error(fmt::format("{}: between 1 and {} projections, got {}", op, Tape::kMaxOutputs, p.size()));
  if (out.size() != p.size())
    throw Error(fmt::format("{}: room for {} outputs, given {}", op, p.size(), out.size()));
  const Shape& xs = x.shape();
  if (xs.slots != 1) ops::shape_error(op, "x must be a batch of matrices [B,r,c], not a memory", x);
  const std::size_t K = p.size();
  std::array<Var, Tape::kMaxOutputs> u, v, b;
  std::int64_t R = 0;
  for (std::size_t k = 0; k < K; ++k) {
    const Projection& q = p[k];
    ops::same_tape(op, x, q.u);
    ops::same_tape(op, x, q.v);
    ops::same_tape(op, x, q.b);
    const Shape &us = q.u.shape(), &vs = q.v.shape(), &bs = q.b.shape();
    if (us.batch != 1 || us.slots != 1 || us.rows != xs.rows)
      ops::shape_error(op, "each U must be a parameter [r,r'] with r the rows of x", x, q.u);
    if (vs.batch != 1 || vs.slots != 1 || vs.rows != xs.cols)
      ops::shape_error(op, "each V must be a parameter [c,c'] with c the cols of x", x, q.v);
    if (bs != parameter(us.cols, vs.cols))
      throw ShapeError(fmt::format("{}: bias {} must be [1,{},{}] for U {} and V {}", op, bs.str(), us.cols, vs.cols,
                                   us.str(), vs.str()));
    u[k] = q.u, v[k] = q.v, b[k] = q.b;
    R += us.cols;
  }
  const auto span = [K](const std::array<Var, Tape::kMaxOutputs>& a) { return std::span<const Var>(a.data(), K); };
  if (xs.rows == 1 && R == std::int64_t(K))  // the vector form: V_s, then stacked_projections
    return stacked_projections(x, stack_columns(span(v)), span(u), span(b), out);
  projections(x, stack_columns(span(u)), span(v), span(b), out);  // the matrix form: U_s, then the op
}

void projections(Var x, Var u_stacked, std::span<const Var> v, std::span<const Var> b, std::span<Var> out) {
  const char* op = "projections";
  const std::size_t K = v.size();
  check_counts(op, "V's", K, b.size(), out.size());
  ops::same_tape(op, x, u_stacked);
  const Shape xs = x.shape(), us = u_stacked.shape();  // copies: apply() may move the tape's nodes
  if (xs.slots != 1) ops::shape_error(op, "x must be a batch of matrices [B,r,c], not a memory", x);
  if (us.batch != 1 || us.slots != 1 || us.rows != xs.rows)
    ops::shape_error(op, "U_s must be a parameter [r,R'] with r the rows of x", x, u_stacked);
  std::array<Var, 2 + 2 * Tape::kMaxOutputs> in;
  std::array<Shape, Tape::kMaxOutputs> shapes;
  in[0] = x, in[1] = u_stacked;
  std::int64_t max_cols = 0;
  Dims d{std::int64_t(K), xs.batch, xs.rows, xs.cols, us.cols, 0};
  std::int64_t R = 0;
  for (std::size_t k = 0; k < K; ++k) {
    ops::same_tape(op, x, v[k]);
    ops::same_tape(op, x, b[k]);
    const Shape vs = v[k].shape(), bs = b[k].shape();
    if (vs.batch != 1 || vs.slots != 1 || vs.rows != xs.cols)
      ops::shape_error(op, "each V must be a parameter [c,c'] with c the cols of x", x, v[k]);
    if (bs.batch != 1 || bs.slots != 1 || bs.cols != vs.cols)
      throw ShapeError(fmt::format("{}: bias {} must be [1,r'_k,{}] for V {}", op, bs.str(), vs.cols, vs.str()));
    in[2 + 2 * k] = v[k], in[3 + 2 * k] = b[k];
    shapes[k] = matrices(xs.batch, bs.rows, vs.cols);
    R += bs.rows, d.C += vs.cols;
    max_cols = std::max(max_cols, vs.cols);
  }
  if (R != us.cols)
    throw ShapeError(fmt::format("{}: the biases' {} rows in all must be U_s's columns, {}", op, R, us.str()));
  const bool recompute = ops::recomputes(*x.tape, saved_size(d), d.r * d.R);  // T̂ saved, or rebuilt from U_s
  OpAttrs attrs;
  attrs.i[0] = recompute;  // for flops()
  x.tape->apply(kOp, std::span<const Var>(in.data(), 2 + 2 * K), std::span<const Shape>(shapes.data(), K), out, attrs,
                recompute ? 0 : saved_size(d), scratch_size(d, max_cols));
}

void stacked_projections(Var x, Var v_stacked, std::span<const Var> u, std::span<const Var> b, std::span<Var> out) {
  const char* op = "stacked_projections";
  const std::size_t K = u.size();
  check_counts(op, "u's", K, b.size(), out.size());
  ops::same_tape(op, x, v_stacked);
  const Shape xs = x.shape(), vs = v_stacked.shape();  // copies: apply() may move the tape's nodes
  if (xs.slots != 1 || xs.rows != 1) ops::shape_error(op, "x must be a batch of rows [B,1,c]", x);
  if (vs.batch != 1 || vs.slots != 1 || vs.rows != xs.cols)
    ops::shape_error(op, "V_s must be a parameter [c,C] with c the cols of x", x, v_stacked);
  std::array<Var, 2 + 2 * Tape::kMaxOutputs> in;
  std::array<Shape, Tape::kMaxOutputs> shapes;
  in[0] = x, in[1] = v_stacked;
  std::int64_t C = 0;
  for (std::size_t k = 0; k < K; ++k) {
    ops::same_tape(op, x, u[k]);
    ops::same_tape(op, x, b[k]);
    if (u[k].shape() != parameter(1, 1)) ops::shape_error(op, "each u must be a parameter [1,1]", x, u[k]);
    const Shape bk = b[k].shape();
    if (bk.batch != 1 || bk.slots != 1 || bk.rows != 1)
      ops::shape_error(op, "each bias must be a parameter [1,c'_k]", x, b[k]);
    in[2 + 2 * k] = u[k], in[3 + 2 * k] = b[k];
    shapes[k] = matrices(xs.batch, 1, bk.cols);
    C += bk.cols;
  }
  if (C != vs.cols)
    throw ShapeError(fmt::format("{}: the biases' {} columns in all must be V_s's, {}", op, C, vs.str()));
  const StackedDims d{std::int64_t(K), xs.batch, xs.cols, C};
  const bool recompute = ops::recomputes(*x.tape, d.B * d.C, d.c * d.C);  // Ẑ saved, or rebuilt from V_s
  OpAttrs attrs;
  attrs.i[0] = recompute;  // for flops()
  x.tape->apply(kStackedOp, std::span<const Var>(in.data(), 2 + 2 * K), std::span<const Shape>(shapes.data(), K), out,
                attrs, recompute ? 0 : d.B * d.C, stacked_scratch(d));
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
                             {"B2", random_tensor(rng, parameter(1, d.cols2))},
                             {"X2", random_tensor(rng, matrices(d.batch, d.rows, d.cols))}};
            // One U_s for two time steps' x (its gradient assigned by the later step's backward, then added to),
            // every output into the loss: Y_1 ⊙ Y_2 of each (Y_2's one row broadcast over Y_1's).
            sample.apply = [](Tape&, std::span<const Var> x) {
              const Var u[] = {x[1], x[4]}, v[] = {x[2], x[5]}, b[] = {x[3], x[6]};
              const Var us = stack_columns(u);
              std::array<Var, 2> y1, y2;
              projections(x[0], us, v, b, y1);
              projections(x[7], us, v, b, y2);
              return add(hadamard(y1[0], y1[1]), hadamard(y2[0], y2[1]));
            };
            return sample;
          }};
}

OpEntry stacked_projections_entry() {
  return {"stacked_projections", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"X1", random_tensor(rng, matrices(d.batch, 1, d.cols))},
                             {"X2", random_tensor(rng, matrices(d.batch, 1, d.cols))},
                             {"V1", random_tensor(rng, parameter(d.cols, d.cols2))},
                             {"V2", random_tensor(rng, parameter(d.cols, d.cols2))},
                             {"u1", random_tensor(rng, parameter(1, 1))},
                             {"u2", random_tensor(rng, parameter(1, 1))},
                             {"B1", random_tensor(rng, parameter(1, d.cols2))},
                             {"B2", random_tensor(rng, parameter(1, d.cols2))}};
            // One V_s for two time steps' x (its gradient assigned by the later step's backward, then added to),
            // every output into the loss through a product with another.
            sample.apply = [](Tape&, std::span<const Var> x) {
              const Var v[] = {x[2], x[3]}, u[] = {x[4], x[5]}, b[] = {x[6], x[7]};
              const Var vs = stack_columns(v);
              std::array<Var, 2> y1, y2;
              stacked_projections(x[0], vs, u, b, y1);
              stacked_projections(x[1], vs, u, b, y2);
              return add(hadamard(y1[0], y2[1]), hadamard(y1[1], y2[0]));
            };
            return sample;
          }};
}

}  // namespace matmem
