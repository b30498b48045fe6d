// ntm_addressing: one NTM head's weighting from its content similarities (000 §6, 001 §4; the NTM's
// eqs. 5–9), the composition
//   w_c = softmax(β K_h)                         K_h: row h of similarity [B,H,N]
//   w_g = g w_c + (1 − g) w_{t−1}
//   w̃  = circular_shift(w_g, s)                  w̃_i = Σ_k s_k w_g,(i−(k−S)) mod N
//   w  = sharpen(w̃, γ) = softmax(γ log(w̃ + ε))  ε = 1e-12
// in one kernel per batch item, its values equal to those of the composed ops (a test checks values and
// gradients against them). ntm_addressing_heads is the same for G ≤ 12 heads in one op call (rows h0 ..
// h0 + G − 1, one output per head; the tape takes 64 inputs): the kernel runs each head in turn, so every
// head's values are those of its own ntm_addressing call bit for bit, and a step's heads cost one node, one
// set of buffers and one backward call. β, g, γ: [B,1]; s: [B,2S+1]; w_{t−1}: [B,N]; -> [B,N]. Backward, per item,
// with ∂ the upstream gradient of each stage (ȳ = upstream of w):
//   du = w ⊙ (ȳ − <ȳ, w>),  ∂γ += <du, log(w̃ + ε)>,  ∂w̃ = du γ / (w̃ + ε)
//   ∂w_g,j = Σ_k s_k ∂w̃_(j+k−S) mod N,  ∂s_k += Σ_i w_g,(i−k+S) mod N ∂w̃_i
//   ∂g += <∂w_g, w_c − w_{t−1}>,  ∂w_{t−1} += (1 − g) ∂w_g,  ∂w_c = g ∂w_g
//   dz = w_c ⊙ (∂w_c − <∂w_c, w_c>),  ∂β += <dz, K_h>,  ∂K_h += β dz
// Saved: w_c, w̃ + ε and log(w̃ + ε), each [B,N] (w_g is recomputed in backward: a saved row is fresh
// memory to write on every step). Scratch: a row of w_g (forward) or ∂w̃ (backward) extended periodically,
// e[t] = v_(t−S) mod N, so that both shifts read contiguous SIMD chunks at offsets e + i + 2S − k (forward)
// and e + j + k (backward) with no wrap-around; and a row of ∂w_c.
// Why one op: the composed form is nine small ops per head and step, each a pass over [B,N] with its own
// node, buffers and gradient; fused, a row is six SIMD passes forward and four backward, in L1:
//   forward:  β K_h and its max | e^(β K_h − m) and its sum | w_c, w_g | w̃, log(w̃ + ε), γ log(w̃ + ε) and
//             its max | their exp and its sum | w
//   backward: <ȳ, w> | du, ∂γ, ∂w̃ | ∂w_g, ∂g, ∂w_{t−1}, ∂w_c, <∂w_c, w_c> | dz, ∂β, ∂K_h   (+ one per ∂s_k)
// Partial last chunks are masked (ops::simd::load_chunk): padded lanes are 0 wherever they would enter a
// sum, −Inf before an exp, and a value of the row before a max.
// ntm_addressing_logits is ntm_addressing_heads from the heads' logits, the NTM's activations inside the op:
//   β = softplus(β̂), g = sigm(ĝ), s = softmax(ŝ), γ = 1 + softplus(γ̂)
// and backward ∂β̂ = ∂β sigm(β̂), ∂ĝ = ∂g g (1 − g), ∂ŝ = s ⊙ (∂s − <∂s, s>), ∂γ̂ = ∂γ sigm(γ̂), each the
// arithmetic of the softplus, sigmoid, softmax and affine ops (ops/simd.hpp's functions, in their order), so its
// values and gradients are those of the composed ops bit for bit (a test checks it). A head's activations were
// five nodes of their own a step, each a call of its own on one to 2S+1 values a batch item: at batch 1 most of
// a MatNTM step's nodes (1,042 of 1,357 in Graves' recall in matrix form).
#include <algorithm>
#include <array>
#include <limits>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/shift.hpp"
#include "matmem/ops/simd.hpp"

namespace matmem {
namespace {
constexpr double kEps = 1e-12;  // as sharpen

// Scratch of one head's pass, reused by each head: a row of w_g (forward) or ∂w̃ (backward) extended and a row
// of ∂w_c (Np + 2S + Np ≤ 3N + 2W elements, W ≤ 16); with logits after them the head's activations [3B + BK], a
// row ∂s [K], then ∂β, ∂g, ∂γ and the activations' derivatives [4B].
std::int64_t activations_offset(std::int64_t N) { return 3 * N + 32; }
std::int64_t scratch_size(std::int64_t N, std::int64_t B, std::int64_t K, bool logits) {
  return activations_offset(N) + (logits ? B * (3 + K) + K + 4 * B : 0);
}

// One head's β, g, s, γ for every batch item: the inputs themselves, or (Logits) their activations in scratch.
template <class T>
struct HeadValues {
  const T *beta, *g, *s, *gamma;
};

template <class T, bool Logits>
struct NtmAddressingKernelOf {
  using V = xsimd::batch<T>;
  static constexpr std::int64_t W = V::size;
  static constexpr T kInf = std::numeric_limits<T>::infinity();

  // e[t] = v_(t−S) mod N for t in [0, Np + 2S) (Np: N rounded up to W), given v in e[S..S+N).
  static void extend_periodically(T* e, std::int64_t S, std::int64_t N) {
    const std::int64_t Np = (N + W - 1) / W * W;
    for (std::int64_t t = 0; t < S; ++t) e[t] = e[t + N];
    for (std::int64_t q = 0; q < Np - N + S; ++q) e[S + N + q] = e[S + q];  // in order: may wrap again
  }

  // Inputs: the similarity, then β, g, s, γ, w_{t−1} of each head (G = (arity − 1) / 5 heads, one output
  // each, the rows attrs.i[0] .. attrs.i[0] + G − 1 of the similarity); ntm_addressing is G = 1.
  static void forward(const OpCall<T>& c) {
    for (int head = 0; head < (c.arity - 1) / 5; ++head) forward_head(c, head);
  }
  static HeadValues<T> head_values(const OpCall<T>& c, int head) {
    const int a = 1 + 5 * head;
    if constexpr (!Logits) {
      return {c.x[a], c.x[a + 1], c.x[a + 2], c.x[a + 3]};
    } else {
      const std::int64_t B = c.y_shape.batch, K = c.x_shape[a + 2].cols;
      T *beta = c.scratch + activations_offset(c.y_shape.cols), *g = beta + B, *gamma = g + B, *s = gamma + B;
      ops::simd::softplus(c.x[a], beta, B);
      ops::simd::sigmoid(c.x[a + 1], g, B);
      for (std::int64_t b = 0; b < B; ++b) ops::simd::softmax(c.x[a + 2] + b * K, s + b * K, K);
      ops::simd::softplus(c.x[a + 3], gamma, B);
      for (std::int64_t b = 0; b < B; ++b) gamma[b] = T(1) * gamma[b] + T(1);  // affine(·, 1, 1)
      return {beta, g, s, gamma};
    }
  }
  static void forward_head(const OpCall<T>& c, int head) {
    namespace simd = ops::simd;
    const int a = 1 + 5 * head;  // this head's β
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols, K = c.x_shape[a + 2].cols, S = K / 2;
    const std::int64_t h = c.attrs.i[0] + head;
    T* ext = c.scratch;  // w_g extended
    const HeadValues<T> hv = head_values(c, head);
    for (std::int64_t b = 0; b < B; ++b) {
      const T *sim = c.x[0] + (h * B + b) * N, *s = hv.s + b * K, *wp = c.x[a + 4] + b * N;
      const T beta = hv.beta[b], g = hv.g[b], gamma = hv.gamma[b];
      T *wc = c.saved + (3 * head * B + b) * N, *wse = wc + B * N, *lws = wse + B * N;
      T* w = c.ys[head] + b * N;
      // w_c = softmax(β K_h)
      V vmax(-kInf), vsum(T(0));
      for (std::int64_t i = 0; i < N; i += W) {
        const V z = V(beta) * simd::load_chunk(sim, i, N, sim[0]);
        simd::store_chunk(z, wc, i, N);
        vmax = xsimd::max(vmax, z);
      }
      V m(simd::hmax(vmax));
      for (std::int64_t i = 0; i < N; i += W) {
        const V e = xsimd::exp(simd::load_chunk(wc, i, N, -kInf) - m);
        simd::store_chunk(e, wc, i, N);
        vsum += e;
      }
      // w_g = g w_c + (1 − g) w_{t−1}
      const V inv(T(1) / xsimd::hadd(vsum));
      for (std::int64_t i = 0; i < N; i += W) {
        const V vc = simd::load_chunk(wc, i, N, T(0)) * inv;
        const V vg = V(g) * vc + V(T(1) - g) * simd::load_chunk(wp, i, N, T(0));
        simd::store_chunk(vc, wc, i, N);
        vg.store_unaligned(ext + S + i);
      }
      extend_periodically(ext, S, N);
      // w̃_i = Σ_k s_k e[i + 2S − k]; lanes past N are w̃_(i mod N), values of the row, for the max.
      vmax = V(-kInf);
      for (std::int64_t i = 0; i < N; i += W) {
        V ws(T(0));
        for (std::int64_t k = 0; k < K; ++k)
          ws = xsimd::fma(V(s[k]), V::load_unaligned(ext + i + 2 * S - k), ws);
        ws += V(T(kEps));
        const V lw = xsimd::log(ws), u = V(gamma) * lw;
        simd::store_chunk(ws, wse, i, N);
        simd::store_chunk(lw, lws, i, N);
        simd::store_chunk(u, w, i, N);
        vmax = xsimd::max(vmax, u);
      }
      // w = softmax(γ log(w̃ + ε))
      m = V(simd::hmax(vmax));
      vsum = V(T(0));
      for (std::int64_t i = 0; i < N; i += W) {
        const V e = xsimd::exp(simd::load_chunk(w, i, N, -kInf) - m);
        simd::store_chunk(e, w, i, N);
        vsum += e;
      }
      simd::scale(w, T(1) / xsimd::hadd(vsum), N);
    }
  }

  // A scalar's gradient ∂ (a row's sum) of item b: into its input's gradient, or (Logits) into d[b], the
  // activated value's gradient, which through_activation() then takes through the activation for every item.
  static void accumulate(T* grad, T* d, std::int64_t b, bool fresh, T sum) {
    if constexpr (Logits) d[b] = T(0) + sum;  // assigned, as a fresh gradient is
    else grad[b] = (fresh ? T(0) : grad[b]) + sum;
  }
  // grad_x = d f'(x) (fresh) or grad_x += d f'(x) over the B items (df: f' of each), as the softplus op
  // (f' = sigm(x) of the logit) or the sigmoid op (f' = y (1 − y), y its output) write it, so that the compiler
  // forms the same products.
  static void through_activation(T* grad, const T* d, const T* df, std::int64_t B, bool fresh) {
    if (fresh)
      for (std::int64_t b = 0; b < B; ++b) grad[b] = d[b] * df[b];
    else
      for (std::int64_t b = 0; b < B; ++b) grad[b] += d[b] * df[b];
  }

  static void backward(const OpCall<T>& c) {
    const int heads = (c.arity - 1) / 5;
    // A fresh gradient (assigns_fresh) is assigned; the similarity's only when these heads' rows are all of it.
    const bool fresh_sim = c.fresh(0) && c.x_shape[0].rows == heads;
    if (c.grad_x[0] && c.fresh(0) && !fresh_sim) std::fill_n(c.grad_x[0], c.x_shape[0].numel(), T(0));
    for (int head = 0; head < heads; ++head) backward_head(c, head, fresh_sim);
  }
  static void backward_head(const OpCall<T>& c, int head, bool fresh_sim) {
    namespace simd = ops::simd;
    const int a = 1 + 5 * head;  // this head's β
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols, K = c.x_shape[a + 2].cols, S = K / 2;
    const std::int64_t h = c.attrs.i[0] + head;
    const std::int64_t Np = (N + W - 1) / W * W;
    T *gsim = c.grad_x[0], *gbeta = c.grad_x[a], *gg = c.grad_x[a + 1], *gs = c.grad_x[a + 2],
      *ggamma = c.grad_x[a + 3], *gwp = c.grad_x[a + 4];
    const bool fresh_beta = c.fresh(a), fresh_g = c.fresh(a + 1), fresh_s = c.fresh(a + 2),
               fresh_gamma = c.fresh(a + 3), fresh_wp = c.fresh(a + 4);
    T *ext = c.scratch, *gwc = ext + Np + 2 * S;  // ∂w̃ extended; ∂w_c
    const HeadValues<T> hv = head_values(c, head);
    // Logits: ∂s of an item, then ∂β, ∂g, ∂γ of every item, and the derivatives of their activations
    T* ds = Logits ? c.scratch + activations_offset(N) + B * (3 + K) : nullptr;
    T *dbeta = Logits ? ds + K : nullptr, *dg = Logits ? dbeta + B : nullptr, *dgamma = Logits ? dg + B : nullptr,
      *df = Logits ? dgamma + B : nullptr;
    for (std::int64_t b = 0; b < B; ++b) {
      const T *sim = c.x[0] + (h * B + b) * N, *s = hv.s + b * K, *wp = c.x[a + 4] + b * N;
      const T beta = hv.beta[b], g = hv.g[b], gamma = hv.gamma[b];
      const T *wc = c.saved + (3 * head * B + b) * N, *wse = wc + B * N, *lws = wse + B * N;
      const T *w = c.ys[head] + b * N, *gy = c.grad_ys[head] + b * N;
      // sharpen: du = w ⊙ (ȳ − <ȳ, w>), ∂γ += <du, log(w̃ + ε)>, ∂w̃ = du γ / (w̃ + ε)
      const V d(simd::dot(gy, w, N));
      V acc(T(0));
      for (std::int64_t i = 0; i < N; i += W) {
        const V du = simd::load_chunk(w, i, N, T(0)) * (simd::load_chunk(gy, i, N, T(0)) - d);
        acc = xsimd::fma(du, simd::load_chunk(lws, i, N, T(0)), acc);
        (du * V(gamma) / simd::load_chunk(wse, i, N, T(1))).store_unaligned(ext + S + i);
      }
      if (ggamma) accumulate(ggamma, dgamma, b, fresh_gamma, xsimd::hadd(acc));
      extend_periodically(ext, S, N);
      // circular shift: ∂s_k += Σ_j w_g,j e[j + k], w_g recomputed
      if (gs)
        for (std::int64_t k = 0; k < K; ++k) {
          acc = V(T(0));
          for (std::int64_t j = 0; j < N; j += W) {
            const V vg =
                V(g) * simd::load_chunk(wc, j, N, T(0)) + V(T(1) - g) * simd::load_chunk(wp, j, N, T(0));
            acc = xsimd::fma(vg, V::load_unaligned(ext + j + k), acc);
          }
          if constexpr (Logits) ds[k] = T(0) + xsimd::hadd(acc);
          else gs[b * K + k] = (fresh_s ? T(0) : gs[b * K + k]) + xsimd::hadd(acc);
        }
      if constexpr (Logits)  // the softmax's backward into a zeroed gradient, as the softmax op's
        if (gs) {
          if (fresh_s) std::fill_n(gs + b * K, K, T(0));
          ops::simd::softmax_backward(s, ds, K, gs + b * K, /*accumulate=*/true);
        }
      // ∂w_g,j = Σ_k s_k e[j + k] (lanes past N: 0 in every sum through w_c, w_{t−1}, masked in stores);
      // interpolation: ∂g += <∂w_g, w_c − w_{t−1}>, ∂w_{t−1} += (1 − g) ∂w_g, ∂w_c = g ∂w_g
      V accg(T(0)), accc(T(0));
      for (std::int64_t j = 0; j < N; j += W) {
        V v(T(0));
        for (std::int64_t k = 0; k < K; ++k) v = xsimd::fma(V(s[k]), V::load_unaligned(ext + j + k), v);
        const V vc = simd::load_chunk(wc, j, N, T(0));
        accg = xsimd::fma(v, vc - simd::load_chunk(wp, j, N, T(0)), accg);
        if (gwp)
          simd::store_chunk((fresh_wp ? V(T(0)) : simd::load_chunk(gwp + b * N, j, N, T(0))) + V(T(1) - g) * v,
                            gwp + b * N, j, N);
        const V v2 = V(g) * v;
        accc = xsimd::fma(v2, vc, accc);
        v2.store_unaligned(gwc + j);
      }
      if (gg) accumulate(gg, dg, b, fresh_g, xsimd::hadd(accg));
      // content softmax: dz = w_c ⊙ (∂w_c − <∂w_c, w_c>), ∂β += <dz, K_h>, ∂K_h += β dz
      if (gsim || gbeta) {
        const V d2(xsimd::hadd(accc));
        acc = V(T(0));
        T* gk = gsim ? gsim + (h * B + b) * N : nullptr;
        for (std::int64_t j = 0; j < N; j += W) {
          const V dz = simd::load_chunk(wc, j, N, T(0)) * (V::load_unaligned(gwc + j) - d2);
          acc = xsimd::fma(dz, simd::load_chunk(sim, j, N, T(0)), acc);
          if (gk)
            simd::store_chunk((fresh_sim ? V(T(0)) : simd::load_chunk(gk, j, N, T(0))) + V(beta) * dz, gk, j, N);
        }
        if (gbeta) accumulate(gbeta, dbeta, b, fresh_beta, xsimd::hadd(acc));
      }
    }
    if constexpr (Logits) {
      if (gbeta) {
        ops::simd::sigmoid(c.x[a], df, B);
        through_activation(gbeta, dbeta, df, B, fresh_beta);
      }
      if (gg) {
        for (std::int64_t b = 0; b < B; ++b) df[b] = hv.g[b] * (T(1) - hv.g[b]);
        through_activation(gg, dg, df, B, fresh_g);
      }
      if (ggamma) {
        ops::simd::sigmoid(c.x[a + 3], df, B);
        through_activation(ggamma, dgamma, df, B, fresh_gamma);
      }
    }
  }
};

Flops flops(const Shape* x, int arity, const Shape& y, const OpAttrs&) {
  const double n = double(y.numel()) * double((arity - 1) / 5), k = double(x[3].cols);
  return {n * (2.0 * k + 16.0), n * (4.0 * k + 24.0)};
}
template <class T>
using NtmAddressingKernel = NtmAddressingKernelOf<T, false>;
template <class T>
using NtmAddressingLogitsKernel = NtmAddressingKernelOf<T, true>;
constexpr OpDef kOp = make_op<NtmAddressingKernel>("ntm_addressing", flops, /*assigns_fresh=*/true);
constexpr OpDef kHeadsOp = make_op<NtmAddressingKernel>("ntm_addressing_heads", flops, /*assigns_fresh=*/true);
constexpr OpDef kLogitsOp = make_op<NtmAddressingLogitsKernel>("ntm_addressing_logits", flops, /*assigns_fresh=*/true);

void check_head(const char* op, Var similarity, std::int64_t head, Var beta, Var gate, Var shift, Var gamma,
                Var w_prev) {
  for (const Var& v : {beta, gate, shift, gamma, w_prev}) ops::same_tape(op, similarity, v);
  const Shape& k = similarity.shape();
  if (k.slots != 1) ops::shape_error(op, "similarity must be [B,H,N] (or [B,N])", similarity);
  if (head < 0 || head >= k.rows)
    throw ShapeError(fmt::format("{}: head {} of similarity {} does not exist (rows 0..{})", op, head, k.str(),
                                 k.rows - 1));
  const Shape w = weighting(k.batch, k.cols);
  for (const Var& v : {beta, gate, gamma})
    if (v.shape() != scalars(k.batch))
      ops::shape_error(op, "beta, gate and gamma must be per-item scalars [B,1]", similarity, v);
  if (w_prev.shape() != w)
    ops::shape_error(op, "the previous weighting must be [B,N] like a similarity row", similarity, w_prev);
  const Shape& s = shift.shape();
  if (!ops::is_weighting(s) || s.batch != k.batch || s.cols % 2 == 0 || s.cols > k.cols)
    ops::shape_error(op, "the shift weighting must be [B,2S+1] with 2S+1 ≤ N", similarity, shift);
}
}  // namespace

Var ntm_addressing(Var similarity, std::int64_t head, Var beta, Var gate, Var shift, Var gamma, Var w_prev) {
  check_head("ntm_addressing", similarity, head, beta, gate, shift, gamma, w_prev);
  const Shape& k = similarity.shape();
  const Shape w = weighting(k.batch, k.cols);
  OpAttrs attrs;
  attrs.i[0] = head;
  return similarity.tape->apply(kOp, {similarity, beta, gate, shift, gamma, w_prev}, w, attrs, 3 * w.numel(),
                                scratch_size(k.cols, k.batch, shift.shape().cols, false));
}

namespace {
void addressing_heads(const OpDef& kind, Var similarity, std::int64_t first_head, std::span<const Var> beta,
                      std::span<const Var> gate, std::span<const Var> shift, std::span<const Var> gamma,
                      std::span<const Var> w_prev, std::span<Var> out) {
  const char* op = kind.name;
  const bool logits = &kind == &kLogitsOp;
  const std::size_t G = beta.size();
  if (G < 1 || G > kNtmAddressingMaxHeads || gate.size() != G || shift.size() != G || gamma.size() != G ||
      w_prev.size() != G || out.size() != G)
    throw Error(fmt::format("{}: between 1 and {} heads, each a β, g, s, γ, w_prev and an output; got {}, {}, {}, "
                            "{}, {} and {}", op, kNtmAddressingMaxHeads, G, gate.size(), shift.size(), gamma.size(),
                            w_prev.size(), out.size()));
  std::array<Var, 1 + 5 * kNtmAddressingMaxHeads> in;
  in[0] = similarity;
  for (std::size_t g = 0; g < G; ++g) {
    check_head(op, similarity, first_head + std::int64_t(g), beta[g], gate[g], shift[g], gamma[g], w_prev[g]);
    if (shift[g].shape() != shift[0].shape())
      ops::shape_error(op, "every head's shift weighting must have the same width", shift[0], shift[g]);
    in[1 + 5 * g] = beta[g], in[2 + 5 * g] = gate[g], in[3 + 5 * g] = shift[g], in[4 + 5 * g] = gamma[g];
    in[5 + 5 * g] = w_prev[g];
  }
  const Shape& k = similarity.shape();
  std::array<Shape, kNtmAddressingMaxHeads> shapes;
  std::fill_n(shapes.begin(), G, weighting(k.batch, k.cols));
  OpAttrs attrs;
  attrs.i[0] = first_head;
  // saved: 3 [B,N] per head; scratch: one head's, reused by each (NtmAddressingKernelOf's layout)
  const std::int64_t K = shift[0].shape().cols;
  similarity.tape->apply(kind, std::span<const Var>(in.data(), 1 + 5 * G), std::span<const Shape>(shapes.data(), G),
                         out, attrs, 3 * std::int64_t(G) * k.batch * k.cols,
                         scratch_size(k.cols, k.batch, K, logits));
}
}  // namespace

void ntm_addressing(Var similarity, std::int64_t first_head, std::span<const Var> beta, std::span<const Var> gate,
                    std::span<const Var> shift, std::span<const Var> gamma, std::span<const Var> w_prev,
                    std::span<Var> out) {
  addressing_heads(kHeadsOp, similarity, first_head, beta, gate, shift, gamma, w_prev, out);
}

void ntm_addressing_logits(Var similarity, std::int64_t first_head, std::span<const Var> beta,
                           std::span<const Var> gate, std::span<const Var> shift, std::span<const Var> gamma,
                           std::span<const Var> w_prev, std::span<Var> out) {
  addressing_heads(kLogitsOp, similarity, first_head, beta, gate, shift, gamma, w_prev, out);
}

// G heads' inputs in the ranges the NTM gives them: the similarity [B,G+1,N] (the heads take rows 1..G),
// then β, g, s, γ, w_prev of each head; ntm_addressing_heads of them, its weightings summed with weights
// 1, 2, .., G, so that a swap of two heads' outputs changes the value.
// With logits, β̂, ĝ, ŝ, γ̂ drawn from (−2, 2): activations well inside their ranges.
OpSample ntm_addressing_heads_sample(Rng& rng, SampleSize size, int heads, bool logits) {
  const SampleDims d = sample_dims(size);
  OpSample sample;
  sample.inputs = {{"similarity", random_tensor(rng, matrices(d.batch, heads + 1, d.slots))}};
  for (int g = 1; g <= heads; ++g) {
    const char* hat = logits ? "_logit" : "";
    sample.inputs.push_back({fmt::format("beta{}{}", g, hat), logits ? random_tensor(rng, scalars(d.batch), -2.0, 2.0)
                                                                     : random_tensor(rng, scalars(d.batch), 0.2, 3.0)});
    sample.inputs.push_back({fmt::format("gate{}{}", g, hat), logits ? random_tensor(rng, scalars(d.batch), -2.0, 2.0)
                                                                     : random_tensor(rng, scalars(d.batch), 0.05, 0.95)});
    sample.inputs.push_back({fmt::format("shift{}{}", g, hat), logits ? random_tensor(rng, weighting(d.batch, 3), -2.0, 2.0)
                                                                      : random_tensor(rng, weighting(d.batch, 3), 0.05, 1.0)});
    sample.inputs.push_back({fmt::format("gamma{}{}", g, hat), logits ? random_tensor(rng, scalars(d.batch), -2.0, 2.0)
                                                                      : random_tensor(rng, scalars(d.batch), 1.0, 3.0)});
    sample.inputs.push_back({fmt::format("w_prev{}", g), random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)});
  }
  sample.apply = [heads, logits](Tape&, std::span<const Var> x) {
    const auto G = std::size_t(heads);
    std::array<std::array<Var, kNtmAddressingMaxHeads>, 5> in;
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t p = 0; p < 5; ++p) in[p][g] = x[1 + 5 * g + p];
    std::array<Var, kNtmAddressingMaxHeads> w;
    auto part = [&](std::size_t p) { return std::span<const Var>(in[p].data(), G); };
    const std::span<Var> out(w.data(), G);
    if (logits) ntm_addressing_logits(x[0], 1, part(0), part(1), part(2), part(3), part(4), out);
    else ntm_addressing(x[0], 1, part(0), part(1), part(2), part(3), part(4), out);
    Var y = w[0];
    for (std::size_t g = 1; g < G; ++g) y = add(y, scale(w[g], double(g + 1)));
    return y;
  };
  return sample;
}

OpEntry ntm_addressing_heads_entry() {
  return {"ntm_addressing_heads",
          [](Rng& rng, SampleSize size) { return ntm_addressing_heads_sample(rng, size, 3, false); }};
}

OpEntry ntm_addressing_logits_entry() {
  return {"ntm_addressing_logits",
          [](Rng& rng, SampleSize size) { return ntm_addressing_heads_sample(rng, size, 3, true); }};
}

OpEntry ntm_addressing_entry() {
  return {"ntm_addressing", [](Rng& rng, SampleSize size) {
            const SampleDims d = sample_dims(size);
            OpSample sample;
            // Values in the ranges the NTM gives them: β > 0, g in (0,1), s ≥ 0, γ ≥ 1, w_{t−1} ≥ 0.
            sample.inputs = {{"similarity", random_tensor(rng, matrices(d.batch, 2, d.slots))},
                             {"beta", random_tensor(rng, scalars(d.batch), 0.2, 3.0)},
                             {"gate", random_tensor(rng, scalars(d.batch), 0.05, 0.95)},
                             {"shift", random_tensor(rng, weighting(d.batch, 3), 0.05, 1.0)},
                             {"gamma", random_tensor(rng, scalars(d.batch), 1.0, 3.0)},
                             {"w_prev", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)}};
            sample.apply = [](Tape&, std::span<const Var> x) {
              return ntm_addressing(x[0], 1, x[1], x[2], x[3], x[4], x[5]);
            };
            return sample;
          }};
}

}  // namespace matmem
