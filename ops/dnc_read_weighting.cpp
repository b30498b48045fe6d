// dnc_read_weighting: a DNC read head's weighting from its three read modes (spec/dnc.md §7):
//   y = π_0 b + π_1 c + π_2 f    π:[B,3] (a softmax over the modes), b, c, f:[B,N] -> [B,N]
// π's columns in [N]'s order: 0 backward, 1 content, 2 forward ([N] writes π[1], π[2], π[3]). [D]
// (`access.py::_read_weights`) orders them backward, forward, content (with one write head): the same
// function, with π's columns permuted; it matters only when porting weights.
//   grad_π_0 += Σ_n g_n b_n (and so on),  grad_b += π_0 g,  grad_c += π_1 g,  grad_f += π_2 g
// With `fallback` (the MatDNC's `dnc.read_fallback`), what the directions do not place goes to content:
//   y = π_0 b + π_2 f + κ c,   κ = π_1 + π_0 (1 − Σ_n b_n) + π_2 (1 − Σ_n f_n)
// so Σ y = 1 whenever c is a distribution, whatever b and f hold (the plain form's Σ y is π_1 + π_0 Σ b + π_2 Σ f:
// from a zero previous weighting, with π_1 near 0, nothing is read, and the gradients that could change that,
// to π_1 through ⟨g, c⟩ π_1 (1 − π_1) and to the directions' modes through ⟨g, b⟩, ⟨g, f⟩, vanish with it).
// With G_c = Σ_n g_n c_n:
//   grad_π_0 += ⟨g, b⟩ + (1 − Σ b) G_c,  grad_π_1 += G_c,  grad_π_2 += ⟨g, f⟩ + (1 − Σ f) G_c,
//   grad_b += π_0 (g − G_c),  grad_c += κ g,  grad_f += π_2 (g − G_c)   (attrs: i[0] 1 for the fallback)
// Layout: weightings are row-major [B,1,N] (sample b's slots at b·N), π's modes at b·3. No buffers.
#include "matmem/ops/check.hpp"
#include "matmem/ops/dnc.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
template <class T>
struct DncReadWeightingKernel {
  // Inputs: π, then the weightings of the modes in π's order: b, c, f.
  // The mixing weights of sample b: π as given, or with the fallback (π_0, κ, π_2); and 1 − Σ b, 1 − Σ f.
  struct Mix {
    T w[3], missing_b = 0, missing_f = 0;
  };
  static Mix mix(const OpCall<T>& c, std::int64_t b, std::int64_t N) {
    const T* pi = c.x[0] + b * 3;
    Mix m{{pi[0], pi[1], pi[2]}};
    if (c.attrs.i[0] == 0) return m;
    T sb = 0, sf = 0;
    for (std::int64_t n = 0; n < N; ++n) sb += c.x[1][b * N + n], sf += c.x[3][b * N + n];
    m.missing_b = 1 - sb, m.missing_f = 1 - sf;
    m.w[1] += pi[0] * m.missing_b + pi[2] * m.missing_f;
    return m;
  }
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    for (std::int64_t b = 0; b < B; ++b) {
      const Mix m = mix(c, b, N);
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t o = b * N + n;
        c.y[o] = m.w[0] * c.x[1][o] + m.w[1] * c.x[2][o] + m.w[2] * c.x[3][o];
      }
    }
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    const bool fallback = c.attrs.i[0] != 0;
    for (std::int64_t b = 0; b < B; ++b) {
      const Mix m = mix(c, b, N);
      T gpi[3] = {0, 0, 0};  // ⟨g, b⟩, ⟨g, c⟩ = G_c, ⟨g, f⟩
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t o = b * N + n;
        const T g = c.grad_y[o];
        for (int k = 0; k < 3; ++k) {
          gpi[k] += g * c.x[1 + k][o];
          if (c.grad_x[1 + k]) c.grad_x[1 + k][o] += m.w[k] * g;
        }
      }
      if (fallback) {  // κ's own terms: −π_0 G_c to every b_n, −π_2 G_c to every f_n
        const T* pi = c.x[0] + b * 3;
        if (T* gb = c.grad_x[1])
          for (std::int64_t n = 0; n < N; ++n) gb[b * N + n] -= pi[0] * gpi[1];
        if (T* gf = c.grad_x[3])
          for (std::int64_t n = 0; n < N; ++n) gf[b * N + n] -= pi[2] * gpi[1];
        gpi[0] += m.missing_b * gpi[1];
        gpi[2] += m.missing_f * gpi[1];
      }
      if (c.grad_x[0])
        for (int k = 0; k < 3; ++k) c.grad_x[0][b * 3 + k] += gpi[k];
    }
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {5.0 * y.numel(), 12.0 * y.numel()}; }
constexpr OpDef kOp = make_op<DncReadWeightingKernel>("dnc_read_weighting", flops);
}  // namespace

Var dnc_read_weighting(Var modes, Var backward, Var content, Var forward, bool fallback) {
  ops::same_shape("dnc_read_weighting", backward, content);
  ops::same_shape("dnc_read_weighting", content, forward);
  ops::same_tape("dnc_read_weighting", modes, content);
  const Shape &ms = modes.shape(), &ws = content.shape();
  if (!ops::is_weighting(ws)) ops::shape_error("dnc_read_weighting", "the mode weightings must be [B,N]", content);
  if (ms != weighting(ws.batch, 3))
    ops::shape_error("dnc_read_weighting", "the modes must be [B,3] (backward, content, forward) for weightings [B,N]", modes, content);
  OpAttrs attrs;
  attrs.i[0] = fallback ? 1 : 0;
  return content.tape->apply(kOp, {modes, backward, content, forward}, ws, attrs);
}

// π a softmax-like point of the simplex (positive, summing to 1), the weightings in [0, 1).
OpEntry dnc_read_weighting_entry() {
  return {"dnc_read_weighting", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            Tensor pi = random_tensor(rng, weighting(d.batch, 3), 0.1, 1.0);
            for (std::int64_t b = 0; b < d.batch; ++b) {
              const double total = pi.get(b * 3) + pi.get(b * 3 + 1) + pi.get(b * 3 + 2);
              for (int m = 0; m < 3; ++m) pi.set(b * 3 + m, pi.get(b * 3 + m) / total);
            }
            OpSample sample;
            sample.inputs = {{"modes", std::move(pi)}};
            for (const char* name : {"backward", "content", "forward"})
              sample.inputs.push_back({name, random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)});
            // Both forms, the fallback's on directions that place part of their mass.
            sample.apply = [](Tape&, std::span<const Var> x) {
              return add(dnc_read_weighting(x[0], x[1], x[2], x[3]),
                         scale(dnc_read_weighting(x[0], x[1], x[2], x[3], true), 0.6));
            };
            return sample;
          }};
}

}  // namespace matmem
