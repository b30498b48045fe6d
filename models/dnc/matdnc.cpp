#include "matmem/models/dnc/matdnc.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "matmem/ops/dnc.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

MatDNC::MatDNC(const DNCConfig& c, DType dtype, std::uint64_t seed, std::string name)
    : Model(std::move(name), dtype, seed),
      config_(c),
      controller_(this->name(), c.controller, c.layers, c.forget_bias, c.controller_clip, c.clip_logits) {
  const std::string& n = this->name();
  if (c.slots < 2 || c.slot_rows < 1 || c.slot_cols < 1)
    throw Error(fmt::format("model {}: memory of {} slots of {}x{} (at least 2 slots of at least 1x1)", n, c.slots,
                            c.slot_rows, c.slot_cols));
  if (c.read_heads < 1 || std::size_t(c.read_heads) > kDncMaxReadHeads)
    throw Error(fmt::format("model {}: {} read heads (1 to {})", n, c.read_heads, kDncMaxReadHeads));
  if (!(c.mask_floor >= 0 && c.mask_floor <= 1))
    throw Error(fmt::format("model {}: mask_floor {} (the masks' floor m₀ is in [0, 1])", n, c.mask_floor));
  set_io(c.input_rows, c.input_cols, c.output_rows, c.output_cols);
  for (const Controller::StateShape& st : controller_.states()) declare_state({st.name, parameter(st.rows, st.cols)});
  // Every state starts at zero, as [D]'s (matdnc.hpp: why a zero memory is safe here).
  declare_state({"memory", memory(1, c.slots, c.slot_rows, c.slot_cols)});
  declare_state({"usage", weighting(1, c.slots)});
  declare_state({"precedence", weighting(1, c.slots)});
  declare_state({"link", parameter(c.slots, c.slots)});
  declare_state({"w/write", weighting(1, c.slots)});
  for (int k = 1; k <= c.read_heads; ++k) {
    const std::string p = fmt::format("{}/read{}", n, k);
    reads_.push_back({fmt::format("w/read{}", k), fmt::format("read{}", k), fmt::format("r{}", k), p + "/key",
                      p + "/beta", p + "/free", p + "/modes", p + "/mask", p + "/sharp_forward",
                      p + "/sharp_backward", fmt::format("read{}", k)});
    declare_state({reads_.back().weighting, weighting(1, c.slots)});
    declare_state({reads_.back().read, parameter(c.slot_rows, c.slot_cols)});
  }
  write_key_ = n + "/write/key", write_beta_ = n + "/write/beta", erase_ = n + "/write/erase";
  add_ = n + "/write/add", allocation_gate_ = n + "/write/allocation", write_gate_ = n + "/write/gate";
  write_mask_ = n + "/write/mask";
  out_ = n + "/out";
}

void MatDNC::step(Step& s) {
  const DNCConfig& c = config_;
  const auto R = std::size_t(c.read_heads);
  // 1. Controller; layer 1 reads the frame and every previous read.
  std::array<NamedTerm, 1 + kDncMaxReadHeads> terms;
  terms[0] = {"x", s.input()};
  for (std::size_t k = 0; k < R; ++k) terms[k + 1] = {reads_[k].term, s.state(reads_[k].read)};
  const Var h = controller_.step(s, std::span<const NamedTerm>(terms.data(), 1 + R));
  // 2. The interface, every part a projection of H_t (one projections op: they share the GEMM Uᵀ H), in
  // [N]'s order of ξ: read keys, read strengths, write key, write strength, erase, write matrix, free gates,
  // allocation gate, write gate, read modes.
  const std::int64_t rows = c.slot_rows, cols = c.slot_cols;
  std::array<ProjectionSpec, 7 + 7 * kDncMaxReadHeads> spec;
  std::size_t n = 0;
  for (std::size_t k = 0; k < R; ++k) spec[n++] = {reads_[k].key, rows, cols};
  for (std::size_t k = 0; k < R; ++k) spec[n++] = {reads_[k].beta, 1, 1};
  spec[n++] = {write_key_, rows, cols};
  spec[n++] = {write_beta_, 1, 1};
  spec[n++] = {erase_, rows, cols};
  spec[n++] = {add_, rows, cols};
  for (std::size_t k = 0; k < R; ++k) spec[n++] = {reads_[k].free, 1, 1};
  spec[n++] = {allocation_gate_, 1, 1};
  spec[n++] = {write_gate_, 1, 1};
  for (std::size_t k = 0; k < R; ++k) spec[n++] = {reads_[k].modes, 1, 3};
  if (c.masked_lookup) {
    for (std::size_t k = 0; k < R; ++k) spec[n++] = {reads_[k].mask, rows, cols};
    spec[n++] = {write_mask_, rows, cols};
  }
  if (c.link_sharpness)
    for (std::size_t k = 0; k < R; ++k) spec[n++] = {reads_[k].sharp_forward, 1, 1}, spec[n++] = {reads_[k].sharp_backward, 1, 1};
  std::array<Var, 7 + 7 * kDncMaxReadHeads> proj;
  s.projections({"h", h}, std::span<const ProjectionSpec>(spec.data(), n), std::span<Var>(proj.data(), n));
  if (c.interface_norm) {  // ξ̂_k = γ_k ⊙ (ξ_k − m)/√(v + ε) + β_k over the whole interface
    layer_norm_joint(std::span<const Var>(proj.data(), n), std::span<Var>(proj.data(), n), 1e-6);
    for (std::size_t k = 0; k < n; ++k) {
      const Shape part = parameter(spec[k].rows, spec[k].cols);
      proj[k] = add(hadamard(proj[k], s.parameter(spec[k].path, "norm", "gain", part, Init::Constant(1))),
                    s.parameter(spec[k].path, "norm", "bias", part, Init::Constant(0)));
    }
  }
  std::array<Var, kDncMaxReadHeads> read_key, read_beta, free_gates, modes, w_read_prev;
  n = 0;
  for (std::size_t k = 0; k < R; ++k) read_key[k] = proj[n++];
  for (std::size_t k = 0; k < R; ++k) read_beta[k] = softplus(proj[n++]);
  const Var write_key = proj[n++];
  const Var write_beta = softplus(proj[n++]);
  const Var erase = sigmoid(proj[n++]);
  const Var added = proj[n++];
  for (std::size_t k = 0; k < R; ++k, ++n)
    free_gates[k] = c.free_gates ? sigmoid(proj[n]) : s.tape().constant(proj[n].shape(), 0.0);
  const Var allocation_gate = sigmoid(proj[n++]);
  const Var write_gate = sigmoid(proj[n++]);
  for (std::size_t k = 0; k < R; ++k) modes[k] = softmax(proj[n++]);
  for (std::size_t k = 0; k < R; ++k) w_read_prev[k] = s.state(reads_[k].weighting);
  // Masks μ = m₀ + (1 − m₀) σ(p) = 1 − (1 − m₀)(1 − σ(p)); a head's content weighting through its mask.
  std::array<Var, kDncMaxReadHeads> read_mask;
  Var write_mask;
  if (c.masked_lookup) {
    auto mask = [&](Var p) { return one_minus(scale(one_minus(sigmoid(p)), 1 - c.mask_floor)); };
    for (std::size_t k = 0; k < R; ++k) read_mask[k] = mask(proj[n++]);
    write_mask = mask(proj[n++]);
  }
  std::array<Var, kDncMaxReadHeads> sharp_forward, sharp_backward;  // s = 1 + softplus(p) = 1 − (−softplus(p))
  if (c.link_sharpness)
    for (std::size_t k = 0; k < R; ++k) {
      sharp_forward[k] = one_minus(scale(softplus(proj[n++]), -1));
      sharp_backward[k] = one_minus(scale(softplus(proj[n++]), -1));
    }
  const CosineEps eps = CosineEps::from_setting(c.cosine_eps);
  auto content = [&](Var key, Var beta, Var memory, Var mask) {
    if (mask.valid()) key = hadamard(key, mask), memory = hadamard(memory, mask);
    return softmax(hadamard(beta, cosine_similarity(key, memory, eps)));
  };

  // 3–5. Usage, allocation and the write weighting, its content part on M_{t−1}.
  const Var m_prev = s.state("memory");
  const Var u_prev = s.state("usage"), w_write_prev = s.state("w/write");
  Var usage, retention;  // ψ = Π_i (1 − f_i w^r_i), composed where the usage's form or de-allocation needs it
  if (c.usage_gradient == DNCConfig::UsageGradient::full || c.deallocation) {
    retention = one_minus(hadamard(free_gates[0], w_read_prev[0]));
    for (std::size_t k = 1; k < R; ++k) retention = hadamard(retention, one_minus(hadamard(free_gates[k], w_read_prev[k])));
  }
  if (c.usage_gradient == DNCConfig::UsageGradient::stop) {
    usage = dnc_usage(u_prev, w_write_prev, std::span<const Var>(free_gates.data(), R),
                      std::span<const Var>(w_read_prev.data(), R));
  } else {  // [N]: (u + w − u ⊙ w) ⊙ ψ, differentiated through w as well
    usage = hadamard(add(u_prev, hadamard(w_write_prev, one_minus(u_prev))), retention);
  }
  const Var allocation = dnc_allocation(usage);
  const Var content_write = content(write_key, write_beta, m_prev, write_mask);
  const Var w_write = dnc_write_weighting(write_gate, allocation_gate, allocation, content_write);
  // 6. Erase and add; with de-allocation on M_{t−1} ⊙ ψ, written as a write of w = 1 − ψ, E = 1, A = 0.
  Var m_kept = m_prev;
  if (c.deallocation)
    m_kept = memory_write(m_prev, one_minus(retention), s.tape().constant(erase.shape(), 1.0),
                          s.tape().constant(added.shape(), 0.0));
  const Var m = memory_write(m_kept, w_write, erase, added);
  // 7. L_t from p_{t−1}, then p_t.
  const DncTemporalLinks links = dnc_temporal_links(s.state("link"), s.state("precedence"), w_write);
  // 8–9. Read weightings (content on M_t, directions through L_t from w^r_{t−1}), then the reads of M_t.
  std::array<Var, kDncMaxReadHeads> reads, w_read;
  for (std::size_t k = 0; k < R; ++k) {
    const Var content_read = content(read_key[k], read_beta[k], m, read_mask[k]);
    Var forward = dnc_forward_weighting(links.link, w_read_prev[k]);
    Var backward = dnc_backward_weighting(links.link, w_read_prev[k]);
    if (c.link_sharpness) forward = sharpen(forward, sharp_forward[k]), backward = sharpen(backward, sharp_backward[k]);
    w_read[k] = dnc_read_weighting(modes[k], backward, content_read, forward, c.read_fallback);
    reads[k] = memory_read(m, w_read[k]);
    s.next(reads_[k].weighting, w_read[k]);
    s.next(reads_[k].read, reads[k]);
  }
  s.next("memory", m);
  s.next("usage", usage);
  s.next("precedence", links.precedence);
  s.next("link", links.link);
  s.next("w/write", w_write);
  if (s.observed()) {
    s.expose("memory", m);
    s.expose("usage", usage);
    s.expose("allocation", allocation);
    s.expose("precedence", links.precedence);
    s.expose("link", links.link);
    s.expose("write1/weighting", w_write);
    s.expose("write1/key", write_key);
    s.expose("write1/beta", write_beta);
    s.expose("write1/erase", erase);
    s.expose("write1/add", added);
    s.expose("write1/allocation_gate", allocation_gate);
    s.expose("write1/gate", write_gate);
    if (write_mask.valid()) s.expose("write1/mask", write_mask);
    for (std::size_t k = 0; k < R; ++k) {
      const std::string& p = reads_[k].exposed;
      s.expose(p + "/weighting", w_read[k]);
      s.expose(p, reads[k]);
      s.expose(p + "/key", read_key[k]);
      s.expose(p + "/beta", read_beta[k]);
      s.expose(p + "/free", free_gates[k]);
      s.expose(p + "/modes", modes[k]);
      if (read_mask[k].valid()) s.expose(p + "/mask", read_mask[k]);
      if (c.link_sharpness) s.expose(p + "/sharp_forward", sharp_forward[k]), s.expose(p + "/sharp_backward", sharp_backward[k]);
    }
  }
  // 10. Output from H_t and this step's reads.
  if (s.output_needed()) {
    terms[0] = {"h", h};
    for (std::size_t k = 0; k < R; ++k) terms[k + 1] = {reads_[k].term, reads[k]};
    const Var y = s.mat(out_, std::span<const NamedTerm>(terms.data(), 1 + R), c.output_rows, c.output_cols);
    s.output(c.clip_logits ? clip(y, c.controller_clip) : y);
  }
}

}  // namespace matmem
