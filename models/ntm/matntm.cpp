#include "matmem/models/ntm/matntm.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"
#include "matmem/runtime/random.hpp"

namespace matmem {

MatNTM::MatNTM(const NTMConfig& c, DType dtype, std::uint64_t seed, std::string name)
    : Model(std::move(name), dtype, seed),
      config_(c),
      controller_(this->name(), c.controller, c.layers, c.forget_bias, c.controller_clip, c.clip_logits),
      out_(this->name() + "/out") {
  const std::string& n = this->name();
  if (c.slots < 2 || c.slot_rows < 1 || c.slot_cols < 1)
    throw Error(fmt::format("model {}: memory of {} slots of {}x{} (at least 2 slots of at least 1x1)", n, c.slots,
                            c.slot_rows, c.slot_cols));
  if (c.read_heads < 1 || c.write_heads < 0 || c.read_heads + c.write_heads > 16)
    throw Error(fmt::format("model {}: read_heads {} and write_heads {} (at least 1 read head, at most 16 heads in all)",
                            n, c.read_heads, c.write_heads));
  if (!(c.memory_init_std > 0) || !std::isfinite(c.memory_init_std))
    throw Error(fmt::format("model {}: memory_init_std {} (a learned memory starts at N(0, σ²), σ > 0)", n,
                            c.memory_init_std));
  if (c.shift < 0 || 2 * c.shift + 1 > c.slots)
    throw Error(fmt::format("model {}: shift {} needs 2 shift + 1 ≤ slots ({})", n, c.shift, c.slots));
  set_io(c.input_rows, c.input_cols, c.output_rows, c.output_cols);
  for (const Controller::StateShape& st : controller_.states()) declare_state({st.name, parameter(st.rows, st.cols)});
  StateDecl m{"memory", memory(1, c.slots, c.slot_rows, c.slot_cols), StateDecl::constant, 1e-6};
  if (c.memory_init == NTMConfig::MemoryInit::learned) {
    m.start = StateDecl::learned;
    m.learned_init = Init::Normal(0, c.memory_init_std);
  } else if (c.memory_init == NTMConfig::MemoryInit::random) {
    // A stream of its own, so the parameters draw the same values as with a constant memory.
    Rng rng = Rng(seed).split(0x6d656d6f7279);  // "memory"
    m.start = StateDecl::given;
    m.initial = Tensor(dtype, m.shape);
    for (std::int64_t k = 0; k < m.initial.numel(); ++k) {
      double v;
      do v = rng.normal(0.0, 0.5);
      while (std::abs(v) > 1.0);
      m.initial.set(k, v);
    }
  }
  m.segment = c.memory_segment;
  declare_state(std::move(m));
  for (int k = 0; k < c.read_heads; ++k) {
    reads_.push_back(fmt::format("read{}", k + 1));
    read_terms_.push_back(fmt::format("r{}", k + 1));
    declare_state({reads_.back(), parameter(c.slot_rows, c.slot_cols), StateDecl::learned, 0, Init::Normal(0, 0.01)});
  }
  for (int k = 0; k < c.read_heads + c.write_heads; ++k) {
    const bool write = k >= c.read_heads;
    const std::string p = write ? fmt::format("{}/write{}", n, k - c.read_heads + 1) : fmt::format("{}/read{}", n, k + 1);
    heads_.push_back({write, fmt::format("w/{}", k + 1), p + "/key", p + "/beta", p + "/gate", p + "/shift",
                      p + "/gamma", p + "/erase", p + "/add",
                      write ? fmt::format("write{}/weighting", k - c.read_heads + 1)
                            : fmt::format("read{}/weighting", k + 1)});
    StateDecl w{heads_.back().weighting, weighting(1, c.slots)};
    if (c.initial_weighting == NTMConfig::Start::first_slot) {
      w.start = StateDecl::given;
      w.initial = Tensor(dtype, weighting(1, c.slots));
      w.initial.set(0, 1.0);
    }
    declare_state(std::move(w));
  }
}

void MatNTM::step(Step& s) {
  const NTMConfig& c = config_;
  // 1. Controller; layer 1 reads the frame and every previous read.
  std::array<NamedTerm, 17> terms;
  terms[0] = {"x", s.input()};
  for (int k = 0; k < c.read_heads; ++k) terms[k + 1] = {read_terms_[k], s.state(reads_[k])};
  const Var h = controller_.step(s, std::span<const NamedTerm>(terms.data(), 1 + c.read_heads));
  // 2–4. Heads address M_{t−1}; reads read it; writes then update it in order. Every head's projections
  // are made in head order (so parameters are created, and initialised, in that order), then one
  // cosine_similarity call compares all keys with M_{t−1} in a single pass over it.
  const Var m_prev = s.state("memory");
  const std::size_t H = heads_.size();
  struct Projections {
    Var beta, gate, shift, gamma, erase, added;
  };
  std::array<Projections, 16> p;
  std::array<Var, 16> keys;
  // Every head's projections of H_t (key, β, g, s, γ, and for a write head erase and add) in head order,
  // as one projections op: they share the first-stage GEMM Uᵀ H.
  std::array<ProjectionSpec, 16 * 7> spec;
  std::size_t n = 0;
  for (std::size_t k = 0; k < H; ++k) {
    const Head& head = heads_[k];
    spec[n++] = {head.key, c.slot_rows, c.slot_cols};
    spec[n++] = {head.beta, 1, 1};
    spec[n++] = {head.gate, 1, 1};
    spec[n++] = {head.shift, 1, 2 * c.shift + 1};
    spec[n++] = {head.gamma, 1, 1};
    if (head.write) {
      spec[n++] = {head.erase, c.slot_rows, c.slot_cols};
      spec[n++] = {head.add, c.slot_rows, c.slot_cols};
    }
  }
  std::array<Var, 16 * 7> proj;
  s.projections({"h", h}, std::span<const ProjectionSpec>(spec.data(), n), std::span<Var>(proj.data(), n));
  n = 0;
  for (std::size_t k = 0; k < H; ++k) {
    keys[k] = proj[n++];
    // the logits of β, g, s and γ: their activations are made inside ntm_addressing_logits
    p[k].beta = proj[n++];
    p[k].gate = proj[n++];
    p[k].shift = proj[n++];
    p[k].gamma = proj[n++];
    if (heads_[k].write) {
      p[k].erase = sigmoid(proj[n++]);
      p[k].added = config_.add_activation == NTMConfig::AddActivation::sigmoid ? sigmoid(proj[n++]) : proj[n++];
    }
  }
  const Var similarity = cosine_similarity(std::span<const Var>(keys.data(), H), m_prev,
                                           CosineEps::from_setting(config_.cosine_eps));  // [B,H,N]
  // w = sharpen(circular_shift(g softmax(β K_k) + (1 − g) w_{t−1}, s), γ) with β = softplus(β̂), g = sigm(ĝ),
  // s = softmax(ŝ), γ = 1 + softplus(γ̂), every head in one fused op (in even groups where there are more heads
  // than one call takes).
  std::array<Var, 16> beta, gate, shift, gamma, w_prev, w;
  for (std::size_t k = 0; k < H; ++k) {
    beta[k] = p[k].beta, gate[k] = p[k].gate, shift[k] = p[k].shift, gamma[k] = p[k].gamma;
    w_prev[k] = s.state(heads_[k].weighting);
  }
  const std::size_t groups = (H + kNtmAddressingMaxHeads - 1) / kNtmAddressingMaxHeads, per = (H + groups - 1) / groups;
  for (std::size_t h0 = 0; h0 < H; h0 += per) {
    const std::size_t G = std::min(per, H - h0);
    auto part = [&](const std::array<Var, 16>& v) { return std::span<const Var>(v.data() + h0, G); };
    ntm_addressing_logits(similarity, std::int64_t(h0), part(beta), part(gate), part(shift), part(gamma),
                          part(w_prev), std::span<Var>(w.data() + h0, G));
  }
  for (std::size_t k = 0; k < H; ++k) {
    s.next(heads_[k].weighting, w[k]);
    s.expose(heads_[k].exposed, w[k]);
  }
  // Read heads read M_{t−1}; write heads then update it in order. With several writes at batch 1 or from 8
  // sequences a batch, the reads and every write are one pass over M (memory_writes), one memory state a time
  // step on the tape; at batches 2–7, and with one write, the reads and the first write go through M_{t−1}
  // together (memory_read_write) and each later write is a pass of its own (tools/results/op-speed.md, "Many
  // heads"). The two are equal but for float32 rounding.
  const auto R = std::size_t(c.read_heads);
  std::array<Var, 17> out;  // M after the first write, then the reads
  Var m = m_prev;
  if (c.write_heads == 0) {
    for (std::size_t k = 0; k < R; ++k) out[1 + k] = memory_read(m_prev, w[k]);
  } else if (c.write_heads > 1 && (s.batch() == 1 || s.batch() >= 8)) {
    std::array<Var, 16> erase, added;
    for (std::size_t k = R; k < H; ++k) erase[k - R] = p[k].erase, added[k - R] = p[k].added;
    const auto W = H - R;
    const ChainLink link = s.link("memory");
    memory_writes(m_prev, std::span<const Var>(w.data(), R), std::span<const Var>(w.data() + R, W),
                  std::span<const Var>(erase.data(), W), std::span<const Var>(added.data(), W),
                  std::span<Var>(out.data(), R + 1));
    m = out[0];
  } else {
    {
      const ChainLink link = s.link("memory");
      memory_read_write(m_prev, std::span<const Var>(w.data(), R), w[R], p[R].erase, p[R].added,
                        std::span<Var>(out.data(), R + 1));
    }
    m = out[0];
    for (std::size_t k = R + 1; k < H; ++k) {
      const ChainLink link = s.link("memory");
      m = memory_write(m, w[k], p[k].erase, p[k].added);
    }
  }
  const Var* reads = out.data() + 1;
  for (std::size_t k = 0; k < R; ++k) s.next(reads_[k], reads[k]);
  s.next("memory", m);
  s.expose("memory", m);
  // 5. Output from H_t and this step's reads.
  if (s.output_needed()) {
    terms[0] = {"h", h};
    for (int k = 0; k < c.read_heads; ++k) terms[k + 1] = {read_terms_[k], reads[k]};
    const Var y = s.mat(out_, std::span<const NamedTerm>(terms.data(), 1 + c.read_heads), c.output_rows, c.output_cols);
    s.output(c.clip_logits ? clip(y, c.controller_clip) : y);
  }
}

}  // namespace matmem
