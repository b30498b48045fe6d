// dnc_read_weighting: a DNC read head's weighting from its three read modes (spec/dnc.md §7):
//   y = π_0 b + π_1 c + π_2 f    π:[B,3] (a softmax over the modes), b, c, f:[B,N] -> [B,N]
// π's columns in [N]'s order: 0 backward, 1 content, 2 forward ([N] writes π[1], π[2], π[3]). [D]
// (`access.py::_read_weights`) orders them backward, forward, content (with one write head): the same
// function, with π's columns permuted; it matters only when porting weights.
//   grad_π_0 += Σ_n g_n b_n (and so on),  grad_b += π_0 g,  grad_c += π_1 g,  grad_f += π_2 g
// Layout: weightings are row-major [B,1,N] (sample b's slots at b·N), π's modes at b·3. No buffers.
#include "matmem/ops/check.hpp"
#include "matmem/ops/dnc.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
template <class T>
struct DncReadWeightingKernel {
  // Inputs: π, then the weightings of the modes in π's order: b, c, f.
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    for (std::int64_t b = 0; b < B; ++b) {
      const T* pi = c.x[0] + b * 3;
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t o = b * N + n;
        c.y[o] = pi[0] * c.x[1][o] + pi[1] * c.x[2][o] + pi[2] * c.x[3][o];
      }
    }
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    for (std::int64_t b = 0; b < B; ++b) {
      const T* pi = c.x[0] + b * 3;
      T gpi[3] = {0, 0, 0};
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t o = b * N + n;
        const T g = c.grad_y[o];
        for (int m = 0; m < 3; ++m) {
          gpi[m] += g * c.x[1 + m][o];
          if (c.grad_x[1 + m]) c.grad_x[1 + m][o] += pi[m] * g;
        }
      }
      if (c.grad_x[0])
        for (int m = 0; m < 3; ++m) c.grad_x[0][b * 3 + m] += gpi[m];
    }
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {5.0 * y.numel(), 12.0 * y.numel()}; }
constexpr OpDef kOp = make_op<DncReadWeightingKernel>("dnc_read_weighting", flops);
}  // namespace

Var dnc_read_weighting(Var modes, Var backward, Var content, Var forward) {
  ops::same_shape("dnc_read_weighting", backward, content);
  ops::same_shape("dnc_read_weighting", content, forward);
  ops::same_tape("dnc_read_weighting", modes, content);
  const Shape &ms = modes.shape(), &ws = content.shape();
  if (!ops::is_weighting(ws)) ops::shape_error("dnc_read_weighting", "the mode weightings must be [B,N]", content);
  if (ms != weighting(ws.batch, 3))
    ops::shape_error("dnc_read_weighting", "the modes must be [B,3] (backward, content, forward) for weightings [B,N]", modes, content);
  return content.tape->apply(kOp, {modes, backward, content, forward}, ws);
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
            sample.apply = [](Tape&, std::span<const Var> x) { return dnc_read_weighting(x[0], x[1], x[2], x[3]); };
            return sample;
          }};
}

}  // namespace matmem
