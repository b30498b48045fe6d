/// @file
/// The Differentiable Neural Computer's memory management (Graves et al. 2016, Methods; spec/dnc.md §4–7):
/// usage, allocation, write weighting, temporal links and the read weighting, over N slots per sample, with
/// R read heads and one write head. Where DeepMind's code [D] differs from the paper [N], these follow [D]
/// and each op's file gives [N]'s form beside it.
///
/// Shapes: weightings [B,N] (stored [B,1,N]), per-sample scalars [B,1] (stored [B,1,1]), the link matrix
/// [B,N,N] (a batch of N×N matrices). A header of its own, as frobenius.hpp: included by the model that uses
/// it, not by every op's user. Every op throws ShapeError naming itself and the shapes when operands do not fit.
#pragma once
#include <span>

#include "matmem/ops/ops.hpp"

namespace matmem {

inline constexpr std::size_t kDncMaxReadHeads = 16;  ///< the most read heads of one dnc_usage call

/// Usage after the retention of the free gates (ops/dnc_usage.cpp):
///   ψ = Π_i (1 − f_i w^r_{i,t−1}),  u_t = (u_{t−1} + w^w_{t−1} − u_{t−1} ⊙ w^w_{t−1}) ⊙ ψ.
/// u_prev, w_write_prev:[B,N]; free_gates[i]:[B,1] and read_weights_prev[i]:[B,N] for the R heads,
/// 1 ≤ R ≤ kDncMaxReadHeads -> [B,N]. As [D], no gradient reaches w_write_prev (a stop-gradient: usage is
/// not differentiated through past write weights); u_prev, the free gates and the read weights get theirs.
Var dnc_usage(Var u_prev, Var w_write_prev, std::span<const Var> free_gates, std::span<const Var> read_weights_prev);

/// The allocation weighting (ops/dnc_allocation.cpp): with û = ε + (1 − ε) u, ε = 1e-6, and φ the slots in
/// ascending order of û (ties: the lower slot index first), a[φ_j] = (1 − û[φ_j]) Π_{k<j} û[φ_k].
/// u:[B,N] (usages in [0, 1]) -> [B,N]. The gradient flows through the sorted values, not the permutation.
Var dnc_allocation(Var usage);

/// The write weighting w^w = g^w [g^a a + (1 − g^a) c^w], composed of hadamard, one_minus and add (five
/// elementwise ops on [B,N]; spec/dnc.md §5). write_gate g^w, allocation_gate g^a:[B,1]; allocation a,
/// content c^w:[B,N] -> [B,N]. Not an op of its own: timed forward and backward in float32 at B 16, the five
/// ops took 1.3–1.9 µs at N 16 and 2.0–2.8 µs at N 128, against 0.8 and 3.9–4.3 µs for dnc_read_weighting (one
/// node doing the same work; its scalar loop loses to the elementwise ops' SIMD at N 128) and 9–12 and 220 µs
/// for the same step's dnc_link: fused, it would save under a microsecond a step.
inline Var dnc_write_weighting(Var write_gate, Var allocation_gate, Var allocation, Var content) {
  return write_gate * (allocation_gate * allocation + one_minus(allocation_gate) * content);
}

/// The link matrix after a write (ops/dnc_link.cpp): L_t[i,j] = (1 − w[i] − w[j]) L_{t−1}[i,j] + w[i] p_{t−1}[j]
/// for i ≠ j, L_t[i,i] = 0. link_prev:[B,N,N], precedence_prev p_{t−1}, w_write w:[B,N] -> [B,N,N]. O(N²) per sample.
Var dnc_link(Var link_prev, Var precedence_prev, Var w_write);
/// The precedence after a write (ops/dnc_link.cpp): p_t = (1 − Σ_i w[i]) p_{t−1} + w.  p_{t−1}, w:[B,N] -> [B,N].
Var dnc_precedence(Var precedence_prev, Var w_write);
/// L_t and p_t of one write, in the order of [N] and [D]: the link from p_{t−1}, then p_t.
struct DncTemporalLinks {
  Var link;        ///< L_t [B,N,N]
  Var precedence;  ///< p_t [B,N]
};
/// dnc_link(L_{t−1}, p_{t−1}, w), then dnc_precedence(p_{t−1}, w): the link reads the precedence before this write.
inline DncTemporalLinks dnc_temporal_links(Var link_prev, Var precedence_prev, Var w_write) {
  Var link = dnc_link(link_prev, precedence_prev, w_write);
  return {link, dnc_precedence(precedence_prev, w_write)};
}

/// A read head's forward weighting f = L w^r_{t−1} (ops/dnc_directional.cpp).  L:[B,N,N], w:[B,N] -> [B,N]
Var dnc_forward_weighting(Var link, Var read_weight_prev);
/// A read head's backward weighting b = Lᵀ w^r_{t−1} (ops/dnc_directional.cpp).  L:[B,N,N], w:[B,N] -> [B,N]
Var dnc_backward_weighting(Var link, Var read_weight_prev);

/// A read head's weighting from its three modes (ops/dnc_read_weighting.cpp), in [N]'s order
/// (backward, content, forward): w^r = π[0] b + π[1] c + π[2] f.  π:[B,3] (a softmax over 3), b, c, f:[B,N]
/// -> [B,N]. [D] orders π as (backward, forward, content): permute its columns when porting weights.
/// `fallback`: what b and f do not place goes to content, w^r = π[0] b + π[2] f + (π[1] + π[0](1 − Σb) +
/// π[2](1 − Σf)) c, a distribution whenever c is one (the MatDNC's dnc.read_fallback).
Var dnc_read_weighting(Var modes, Var backward, Var content, Var forward, bool fallback = false);

}  // namespace matmem
