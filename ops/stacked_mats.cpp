// stacked_mats: several mats into rows of the same terms in one op (an LSTM's four gates, a GRU's two).
//   Y_g = Σ_t u_t,gᵀ X_t V_t,g + B_g,   X_t:[B,r_t,c_t], u_t,g:[r_t,1], V_t,g:[c_t,c'_g], B_g:[1,c'_g] -> Y_g:[B,1,c'_g]
// for terms t = 1..T and outputs g = 1..G: each Y_g equal to mat({{X_1, u_1,g, V_1,g}, …}, B_g) (a row term's u is
// 1x1: a vector model's maps; a frame of several rows has its rows weighted). Each term's V's come side by side,
// V_t = [V_t,1 | … | V_t,G] (c_t x C, C = Σ c'_g: stack_columns, once a pass in a model, Step::mats), so a term
// is one GEMM whatever G, on X̂_t as the (r_t B) x c_t matrix of its rows (row i B + b: row i of sample b):
//   Z_t = X̂_t V_t ((r_t B) x C; Z_t,g,i its row block i, columns of output g),  Y_g = B_g + Σ_t Σ_i u_t,g,i Z_t,g,i
// (the terms in order) and backward, with G̃_t's row block i = [u_t,1,i G_1 | … | u_t,G,i G_G] ((r_t B) x C):
//   grad_u_t,g,i += <Z_t,g,i, G_g>_F,  grad_B_g += Σ_b G_g,  grad_V_t += X̂_tᵀ G̃_t,  grad_X̂_t += G̃_t V_tᵀ
// T GEMMs forward and 2 T backward, where G mats of T terms take G (T + 1) and about 2 G (T + 1): at one sequence
// an update each is a vector-matrix product, and the mats' per-call costs were most of the LSTM's step (Graves'
// priority sort, LSTM 2 × 100: 8 mats of up to 7 terms a time step). As in stacked_projections
// (ops/projections.cpp): at batch 1 grad_V_t is left to the tape, one product over the unroll (a time step's
// term, an outer product, is as large as V_t); Z is saved, or recomputed in backward where the tape's passes
// outgrow the cache (Tape::recompute_saved) and Z is not far smaller than the V_t (ops::recomputes: at batch 1
// Z is one row a term, so it is saved), and not needed at all when no u has a gradient (u held at one).
// A test checks it against one mat per output in values and gradients, saved and recomputed; the registry's
// sample gradchecks it in float64.
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

// Inputs: x_1..x_T, V_1..V_T, u_t,g at 2T + t G + g, B_g at 2T + T G + g; attrs.i[0] = recompute, i[1] = T.
// Term t's X̂_t is (r_t B) x c_t, row i B + b holding row i of sample b (ops/README.md, "Shapes and layout").
struct Dims {
  std::int64_t T, G, B, C, max_c = 0, max_m = 0, sum_m = 0;  // the widest term; the most and all X̂_t rows
  int x(std::int64_t t) const { return int(t); }
  int v(std::int64_t t) const { return int(T + t); }
  int u(std::int64_t t, std::int64_t g) const { return int(2 * T + t * G + g); }
  int b(std::int64_t g) const { return int(2 * T + T * G + g); }
  // scratch: G̃_t [max r_t B · C], the product added to grad_V_t or grad_X̂_t [max(c·C, r B·c)], then the Z_t
  // [Σ r_t B · C] (when not saved).
  std::int64_t product() const { return std::max(max_c * C, max_m * max_c); }
  std::int64_t z_offset() const { return max_m * C + product(); }
  std::int64_t saved() const { return sum_m * C; }
  std::int64_t scratch() const { return z_offset() + saved(); }
};
Dims dims_of(const Shape* x, std::int64_t arity, std::int64_t terms) {
  Dims d{terms, (arity - 2 * terms) / (terms + 1), x[0].batch, 0};
  for (std::int64_t g = 0; g < d.G; ++g) d.C += x[d.b(g)].cols;
  for (std::int64_t t = 0; t < d.T; ++t) {
    d.max_c = std::max(d.max_c, x[t].cols);
    d.max_m = std::max(d.max_m, x[t].rows * d.B);
    d.sum_m += x[t].rows * d.B;
  }
  return d;
}

template <class T>
struct StackedMatsKernel {
  // Z_t = X̂_t V_t ((r_t B) x C) for every term, one after the other, into the saved buffer, or into scratch when
  // recomputed.
  static T* z_all(const OpCall<T>& c, const Dims& d) {
    T* z = c.saved ? c.saved : c.scratch + d.z_offset();
    T* zt = z;
    for (std::int64_t t = 0; t < d.T; ++t) {
      const std::int64_t ct = c.x_shape[d.x(t)].cols, m = c.x_shape[d.x(t)].rows * d.B;
      blas::gemm<T>(false, false, m, d.C, ct, T(1), c.x[d.x(t)], ct, c.x[d.v(t)], d.C, T(0), zt, d.C);
      zt += m * d.C;
    }
    return z;
  }
  // Y_g = B_g + Σ_t Σ_i u_t,g,i (row block i of Z_t, its columns of output g).
  static void forward(const OpCall<T>& c) {
    const Dims d = dims_of(c.x_shape, c.arity, c.attrs.i[1]);
    const std::int64_t B = d.B, C = d.C;
    const T* z = z_all(c, d);
    std::int64_t off = 0;
    for (std::int64_t g = 0; g < d.G; ++g) {
      const std::int64_t cg = c.x_shape[d.b(g)].cols;
      T* y = c.ys[g];
      for (std::int64_t b = 0; b < B; ++b) std::copy_n(c.x[d.b(g)], cg, y + b * cg);
      const T* zt = z + off;
      for (std::int64_t t = 0; t < d.T; ++t) {
        const std::int64_t r = c.x_shape[d.x(t)].rows;
        for (std::int64_t i = 0; i < r; ++i) {
          const T u = c.x[d.u(t, g)][i];
          for (std::int64_t b = 0; b < B; ++b)
            for (std::int64_t j = 0; j < cg; ++j) y[b * cg + j] += u * zt[(i * B + b) * C + j];
        }
        zt += r * B * C;
      }
      off += cg;
    }
  }
  static void backward(const OpCall<T>& c) {
    const Dims d = dims_of(c.x_shape, c.arity, c.attrs.i[1]);
    const std::int64_t B = d.B, C = d.C;
    T *gt = c.scratch, *tmp = gt + d.max_m * C;
    // A fresh u or B gradient (one that is not a parameter) is zeroed, then accumulated into.
    for (int a = d.u(0, 0); a < c.arity; ++a)
      if (c.fresh(a) && c.grad_x[a]) std::fill_n(c.grad_x[a], c.x_shape[a].numel(), T(0));
    bool any_u = false;
    for (int a = d.u(0, 0); a < d.b(0); ++a) any_u = any_u || c.grad_x[a];
    const T* z = c.saved ? c.saved : any_u ? z_all(c, d) : nullptr;
    std::int64_t off = 0;
    for (std::int64_t g = 0; g < d.G; ++g) {
      const std::int64_t cg = c.x_shape[d.b(g)].cols;
      if (T* gb = c.grad_x[d.b(g)]) ops::add_bias_grad(gb, c.grad_ys[g], B, 1, cg);
    }
    const T* zt = z;
    for (std::int64_t t = 0; t < d.T; ++t) {
      const std::int64_t ct = c.x_shape[d.x(t)].cols, r = c.x_shape[d.x(t)].rows, m = r * B;
      off = 0;
      for (std::int64_t g = 0; g < d.G; ++g) {  // G̃_t, and the u_t,g gradients
        const std::int64_t cg = c.x_shape[d.b(g)].cols;
        const T* gy = c.grad_ys[g];
        T* gu = c.grad_x[d.u(t, g)];
        for (std::int64_t i = 0; i < r; ++i) {
          const T u = c.x[d.u(t, g)][i];
          T acc = 0;
          for (std::int64_t b = 0; b < B; ++b)
            for (std::int64_t j = 0; j < cg; ++j) {
              gt[(i * B + b) * C + off + j] = u * gy[b * cg + j];
              if (zt) acc += zt[(i * B + b) * C + off + j] * gy[b * cg + j];
            }
          if (gu) gu[i] += acc;
        }
        off += cg;
      }
      if (T* gv = c.grad_x[d.v(t)]) {  // grad_V_t += X̂_tᵀ G̃_t: at batch 1 left to the tape
        if (ops::defers(c, m, ct, C)) {
          if (c.fresh(d.v(t))) std::fill_n(gv, ct * C, T(0));
          ops::add_at_b(c, d.v(t), gv, c.x[d.x(t)], gt, m, ct, C);
        } else {
          ops::add_product(gv, c.fresh(d.v(t)), ct * C, tmp, [&](T* out) {
            blas::gemm<T>(true, false, ct, C, m, T(1), c.x[d.x(t)], ct, gt, C, T(0), out, C);
          });
        }
      }
      if (T* gx = c.grad_x[d.x(t)]) {  // grad_X̂_t += G̃_t V_tᵀ
        ops::add_product(gx, c.fresh(d.x(t)), m * ct, tmp, [&](T* out) {
          blas::gemm<T>(false, true, m, ct, C, T(1), gt, C, c.x[d.v(t)], C, T(0), out, ct);
        });
      }
      if (zt) zt += m * C;
    }
  }
};

Flops flops(const Shape* x, int arity, const Shape&, const OpAttrs& attrs) {
  const Dims d = dims_of(x, arity, attrs.i[1]);
  double z = 0;
  for (std::int64_t t = 0; t < d.T; ++t) z += 2.0 * double(x[t].rows * d.B * x[t].cols * d.C);
  const double f = z + 2.0 * double(d.sum_m * d.C);
  return {f, 2.0 * f + (attrs.i[0] ? z : 0.0)};
}
constexpr OpDef kOp = as_gemm(make_op<StackedMatsKernel>("stacked_mats", flops, /*assigns_fresh=*/true));
}  // namespace

void stacked_mats(std::span<const Var> x, std::span<const Var> v_stacked, std::span<const Var> u,
                  std::span<const Var> b, std::span<Var> out) {
  const char* op = "stacked_mats";
  const std::size_t T = x.size(), G = b.size();
  if (T == 0 || G == 0 || G > Tape::kMaxOutputs)
    throw Error(fmt::format("{}: at least one term and between 1 and {} outputs, got {} and {}", op,
                            Tape::kMaxOutputs, T, G));
  if (v_stacked.size() != T || u.size() != T * G || out.size() != G)
    throw Error(fmt::format("{}: {} terms and {} outputs need {} V_t, {} u and room for {} outputs; got {}, {} and {}",
                            op, T, G, T, T * G, G, v_stacked.size(), u.size(), out.size()));
  if (2 * T + T * G + G > kStackedMatsMaxInputs)
    throw Error(fmt::format("{}: {} terms and {} outputs are {} inputs, more than one op takes ({})", op, T, G,
                            2 * T + T * G + G, kStackedMatsMaxInputs));
  std::array<Var, kStackedMatsMaxInputs> in;
  std::array<Shape, Tape::kMaxOutputs> shapes;
  const Shape x0 = x[0].shape();  // copies: apply() may move the tape's nodes
  std::int64_t C = 0;
  for (std::size_t g = 0; g < G; ++g) {
    ops::same_tape(op, x[0], b[g]);
    const Shape bg = b[g].shape();
    if (bg.batch != 1 || bg.slots != 1 || bg.rows != 1)
      ops::shape_error(op, "each bias must be a parameter [1,c'_g]", x[0], b[g]);
    in[2 * T + T * G + g] = b[g];
    shapes[g] = matrices(x0.batch, 1, bg.cols);
    C += bg.cols;
  }
  for (std::size_t t = 0; t < T; ++t) {
    ops::same_tape(op, x[0], x[t]);
    ops::same_tape(op, x[0], v_stacked[t]);
    const Shape xt = x[t].shape(), vt = v_stacked[t].shape();
    if (xt.slots != 1 || xt.batch != x0.batch)
      ops::shape_error(op, "every term must be a batch of matrices [B,r_t,c_t] of one batch size", x[0], x[t]);
    if (vt.batch != 1 || vt.slots != 1 || vt.rows != xt.cols || vt.cols != C)
      throw ShapeError(fmt::format("{}: term {}'s V_t is {}, must be [1,{},{}] (its x's cols by the biases' {} "
                                   "columns in all)", op, t + 1, vt.str(), xt.cols, C, C));
    in[t] = x[t], in[T + t] = v_stacked[t];
    for (std::size_t g = 0; g < G; ++g) {
      ops::same_tape(op, x[0], u[t * G + g]);
      if (u[t * G + g].shape() != parameter(xt.rows, 1))
        throw ShapeError(fmt::format("{}: u of term {} and output {} is {}, must be [1,{},1] (the term's rows)", op,
                                     t + 1, g + 1, u[t * G + g].shape().str(), xt.rows));
      in[2 * T + t * G + g] = u[t * G + g];
    }
  }
  const std::size_t arity = 2 * T + T * G + G;
  std::array<Shape, kStackedMatsMaxInputs> in_shapes;
  for (std::size_t k = 0; k < arity; ++k) in_shapes[k] = in[k].shape();
  const Dims d = dims_of(in_shapes.data(), std::int64_t(arity), std::int64_t(T));
  std::int64_t weights = 0;  // the V_t a recomputation reads again
  for (std::size_t t = 0; t < T; ++t) weights += in_shapes[T + t].numel();
  const bool recompute = ops::recomputes(*x[0].tape, d.saved(), weights);  // Z saved, or rebuilt from the V_t
  OpAttrs attrs;
  attrs.i[0] = recompute, attrs.i[1] = std::int64_t(T);
  x[0].tape->apply(kOp, std::span<const Var>(in.data(), arity), std::span<const Shape>(shapes.data(), G), out, attrs,
                   recompute ? 0 : d.saved(), d.scratch());
}

OpEntry stacked_mats_entry() {
  return {"stacked_mats", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            // A row and a frame of three rows, of different widths, into two outputs of different widths, in two
            // calls on the same V_t (their gradients summed over both, as over a recurrent cell's time steps).
            const std::int64_t c1 = d.cols, c2 = d.cols + 1, o1 = d.cols2, o2 = 1;
            sample.inputs = {{"X1", random_tensor(rng, matrices(d.batch, 1, c1))},
                             {"X2", random_tensor(rng, matrices(d.batch, 3, c2))},
                             {"V11", random_tensor(rng, parameter(c1, o1))},
                             {"V12", random_tensor(rng, parameter(c1, o2))},
                             {"V21", random_tensor(rng, parameter(c2, o1))},
                             {"V22", random_tensor(rng, parameter(c2, o2))},
                             {"u11", random_tensor(rng, parameter(1, 1))},
                             {"u12", random_tensor(rng, parameter(1, 1))},
                             {"u21", random_tensor(rng, parameter(3, 1))},
                             {"u22", random_tensor(rng, parameter(3, 1))},
                             {"B1", random_tensor(rng, parameter(1, o1))},
                             {"B2", random_tensor(rng, parameter(1, o2))}};
            sample.apply = [](Tape&, std::span<const Var> x) {
              const Var v1[] = {x[2], x[3]}, v2[] = {x[4], x[5]};
              const Var vs[] = {stack_columns(v1), stack_columns(v2)};
              const Var u[] = {x[6], x[7], x[8], x[9]}, b[] = {x[10], x[11]};
              const Var first[] = {x[0], x[1]};
              std::array<Var, 2> y1, y2;
              stacked_mats(first, vs, u, b, y1);
              const Var next[] = {x[0], hadamard(x[1], x[1])};
              stacked_mats(next, vs, u, b, y2);
              return add(sum(hadamard(y1[0], y2[0])), sum(hadamard(y1[1], y2[1])));
            };
            return sample;
          }};
}

}  // namespace matmem
