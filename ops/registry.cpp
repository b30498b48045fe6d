#include "matmem/ops/registry.hpp"

#include <cmath>

#include <fmt/format.h>

#include "matmem/ops/ops.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

// One entry per op, defined next to the op's kernels.
OpEntry bilinear_entry();
OpEntry mat_entry();
OpEntry add_entry();
OpEntry sub_entry();
OpEntry hadamard_entry();
OpEntry scale_entry();
OpEntry sigmoid_entry();
OpEntry tanh_entry();
OpEntry relu_entry();
OpEntry clip_entry();
OpEntry clip_gradient_entry();
OpEntry softplus_entry();
OpEntry exp_entry();
OpEntry softmax_entry();
OpEntry sum_entry();
OpEntry layer_norm_entry();
OpEntry batch_norm_entry();
OpEntry cosine_similarity_entry();
OpEntry row_entry();
OpEntry stack_rows_entry();
OpEntry transpose_entry();
OpEntry circular_shift_entry();
OpEntry sharpen_entry();
OpEntry ntm_addressing_entry();
OpEntry ntm_addressing_heads_entry();
OpEntry ntm_addressing_logits_entry();
OpEntry memory_read_entry();
OpEntry memory_write_entry();
OpEntry memory_read_write_entry();
OpEntry memory_writes_entry();
OpEntry projections_entry();
OpEntry stacked_projections_entry();
OpEntry stacked_mats_entry();
OpEntry stack_columns_entry();
OpEntry layer_norm_moments_entry();
OpEntry bce_with_logits_entry();
OpEntry mse_entry();
OpEntry softmax_cross_entropy_entry();
OpEntry frobenius_entry();
OpEntry vec_outer_entry();
OpEntry vec_matvec_entry();
OpEntry neighbour_mean_entry();
OpEntry neighbour_attention_entry();
OpEntry neighbour_stack_entry();
OpEntry attention_read_entry();
OpEntry dnc_usage_entry();
OpEntry dnc_allocation_entry();
OpEntry dnc_link_entry();
OpEntry dnc_precedence_entry();
OpEntry dnc_forward_weighting_entry();
OpEntry dnc_backward_weighting_entry();
OpEntry dnc_read_weighting_entry();

namespace {
std::vector<OpEntry>& entries() {
  static std::vector<OpEntry> all = {
      bilinear_entry(),  mat_entry(),     add_entry(),     sub_entry(),          hadamard_entry(),
      scale_entry(),     sigmoid_entry(), tanh_entry(),    relu_entry(),         clip_entry(),     clip_gradient_entry(),     softplus_entry(),
      exp_entry(),       softmax_entry(), sum_entry(),     layer_norm_entry(), layer_norm_moments_entry(), batch_norm_entry(),     cosine_similarity_entry(),
      row_entry(), stack_rows_entry(), stack_columns_entry(), circular_shift_entry(), sharpen_entry(), ntm_addressing_entry(), ntm_addressing_heads_entry(), ntm_addressing_logits_entry(), memory_read_entry(),
      memory_write_entry(), memory_read_write_entry(), memory_writes_entry(), projections_entry(), stacked_projections_entry(), stacked_mats_entry(),
      bce_with_logits_entry(), mse_entry(), softmax_cross_entropy_entry(), frobenius_entry(),
      vec_outer_entry(), vec_matvec_entry(), neighbour_mean_entry(),
      neighbour_attention_entry(), neighbour_stack_entry(), transpose_entry(), attention_read_entry(),
      dnc_usage_entry(), dnc_allocation_entry(), dnc_link_entry(), dnc_precedence_entry(), dnc_forward_weighting_entry(),
      dnc_backward_weighting_entry(), dnc_read_weighting_entry()};
  return all;
}
}  // namespace

const std::vector<OpEntry>& op_registry() { return entries(); }

const OpEntry* find_op(const std::string& name) {
  for (const OpEntry& e : entries())
    if (e.name == name) return &e;
  return nullptr;
}

void register_op(OpEntry entry) {
  if (find_op(entry.name)) throw Error(fmt::format("an op named {} is already registered", entry.name));
  entries().push_back(std::move(entry));
}

GradcheckReport gradcheck_op(const OpEntry& entry, SampleSize size, std::uint64_t seed, Uses uses) {
  Rng rng(seed);
  OpSample sample = entry.sample(rng, size);
  if (uses == Uses::twice) sample = applied_twice(std::move(sample));
  GradcheckOptions opt;
  opt.full_jacobian = size == SampleSize::small;
  if (entry.atol > 0) opt.atol = entry.atol;
  if (entry.rtol > 0) opt.rtol = entry.rtol;
  return gradcheck(sample.apply, sample.inputs, nullptr, opt);
}

const std::vector<OpCheck>& op_checks() {
  static const std::vector<OpCheck> checks = {{SampleSize::small, Uses::once},
                                              {SampleSize::large, Uses::once},
                                              {SampleSize::lanes, Uses::once},
                                              {SampleSize::small, Uses::twice},
                                              {SampleSize::lanes, Uses::twice}};
  return checks;
}

const char* name_of(SampleSize size) {
  switch (size) {
    case SampleSize::small: return "small";
    case SampleSize::large: return "large";
    case SampleSize::lanes: return "lanes";
    case SampleSize::paper: return "paper";
  }
  return "?";
}

const char* name_of(Uses uses) { return uses == Uses::once ? "once" : "twice"; }

OpSample applied_twice(OpSample sample) {
  sample.apply = [f = std::move(sample.apply)](Tape& tape, std::span<const Var> x) {
    Var first = f(tape, x);
    return add(first, scale(f(tape, x), 0.5));
  };
  return sample;
}

Tensor random_tensor(Rng& rng, Shape shape, double lo, double hi) {
  Tensor t(DType::f64, shape);
  for (std::int64_t k = 0; k < t.numel(); ++k) t.set(k, rng.uniform(lo, hi));
  return t;
}

SampleDims sample_dims(SampleSize size) {
  switch (size) {
    case SampleSize::small: return {2, 3, 5, 4, 3, 7, 3, 5};
    case SampleSize::large: return {3, 9, 19, 10, 11, 13, 9, 19};
    case SampleSize::lanes: return {19, 3, 5, 4, 3, 7, 3, 5};
    case SampleSize::paper: return {16, 15, 15, 15, 15, 120, 6, 6};
  }
  return {};
}

OpSample unary_sample(Rng& rng, SampleSize size, Var (*op)(Var), double lo, double hi) {
  const SampleDims d = sample_dims(size);
  Tensor x = random_tensor(rng, matrices(d.batch, d.rows, d.cols), lo, hi);
  for (std::int64_t k = 0; k < x.numel(); ++k)  // keep clear of kinks at 0 (relu), where differences lie
    if (std::abs(x.get(k)) < 0.05) x.set(k, x.get(k) < 0 ? -0.05 : 0.05);
  OpSample s;
  s.inputs = {{"x", std::move(x)}};
  s.apply = [op](Tape&, std::span<const Var> v) { return op(v[0]); };
  return s;
}

std::vector<GradcheckInput> memory_write_inputs(Rng& rng, const SampleDims& d) {
  return {{"M", random_tensor(rng, memory(d.batch, d.slots, d.mem_rows, d.mem_cols))},
          {"w", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)},
          {"E", random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols), 0.0, 1.0)},
          {"A", random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols))}};
}

OpSample binary_sample(Rng& rng, SampleSize size, Var (*op)(Var, Var), bool broadcast) {
  const SampleDims d = sample_dims(size);
  OpSample s;
  s.inputs = {{"a", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
              {"b", random_tensor(rng, matrices(d.batch, d.rows, d.cols))}};
  if (!broadcast) {
    s.apply = [op](Tape&, std::span<const Var> v) { return op(v[0], v[1]); };
    return s;
  }
  s.inputs.push_back({"parameter", random_tensor(rng, parameter(d.rows, d.cols))});
  s.inputs.push_back({"per-sample scalar", random_tensor(rng, scalars(d.batch))});
  // Equal shapes, a parameter over the batch, a per-sample scalar over each matrix: one output.
  s.apply = [op](Tape&, std::span<const Var> v) { return add(add(op(v[0], v[1]), op(v[2], v[0])), op(v[1], v[3])); };
  return s;
}

}  // namespace matmem
