// Every op with a public front-end, by its C++ name, in the submodule _matmem.ops (matmem.ops). Operands
// are Vars of one tape; lists of Vars where the C++ op takes a span; an absent bias is None.
#include <optional>
#include <span>
#include <vector>

#include <pybind11/stl.h>

#include "matmem/ops/attention_read.hpp"
#include "matmem/ops/dnc.hpp"
#include "matmem/ops/fast_weight_matrix.hpp"
#include "matmem/ops/frobenius.hpp"
#include "matmem/ops/graph.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/transpose.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tools/python/bindings.hpp"

namespace matmem::python {

namespace {

using V = const PyVar&;
using OptV = std::optional<PyVar>;

// An op of Vars: checks that they are on one live tape and wraps the result.
template <class... Vs>
std::shared_ptr<TapeRef> tape_of(const char* op, const Vs&... vs) {
  return common_tape(op, {&vs...});
}
PyVar wrap(const std::shared_ptr<TapeRef>& ref, Var v) { return PyVar::of(ref, v); }

Var get_or_none(const OptV& v) { return v ? v->get() : Var{}; }

void add_all(std::vector<const PyVar*>& ptrs, const std::vector<PyVar>& vs) {
  for (const PyVar& v : vs) ptrs.push_back(&v);
}
// tape_of for an op whose operands are one list.
std::shared_ptr<TapeRef> tape_of_list(const char* op, const std::vector<PyVar>& parts) {
  std::vector<const PyVar*> ptrs;
  add_all(ptrs, parts);
  return common_tape(op, ptrs);
}
std::vector<Var> gets(const std::vector<PyVar>& vs) {
  std::vector<Var> out;
  for (const PyVar& v : vs) out.push_back(v.get());
  return out;
}
py::list wrap_all(const std::shared_ptr<TapeRef>& ref, const std::vector<Var>& vs) {
  py::list out;
  for (const Var& v : vs) out.append(wrap(ref, v));
  return out;
}

#define MATMEM_UNARY(name, doc) \
  ops.def(#name, [](V x) { return wrap(tape_of(#name, x), name(x.get())); }, py::arg("x"), doc)
#define MATMEM_BINARY(name, a, b, doc)                                                                      \
  ops.def(#name, [](V a, V b) { return wrap(tape_of(#name, a, b), name(a.get(), b.get())); }, py::arg(#a), \
          py::arg(#b), doc)


// The stacked forms of projections: x, a stack made once (stack_columns) and a list of maps' other operands a
// map (V's or u's) with their biases; `op` records the op into `out`.
template <class Op>
auto stacked_form(const char* name, Op op) {
  return [name, op](V x, V stacked, const std::vector<PyVar>& maps, const std::vector<PyVar>& biases) {
    std::vector<const PyVar*> ptrs{&x, &stacked};
    add_all(ptrs, maps);
    add_all(ptrs, biases);
    const auto ref = common_tape(name, ptrs);
    const std::vector<Var> m = gets(maps), b = gets(biases);
    std::vector<Var> out(m.size());
    op(x.get(), stacked.get(), m, b, out);
    return wrap_all(ref, out);
  };
}
}  // namespace

void bind_ops(py::module_& m) {
  py::module_ ops = m.def_submodule("ops", "matmem's ops by their C++ names (ops/ops.hpp)");

  ops.def("bilinear", [](V p, V u, V v) { return wrap(tape_of("bilinear", p, u, v), bilinear(p.get(), u.get(), v.get())); },
          py::arg("p"), py::arg("u"), py::arg("v"), "Uᵀ P V per batch item. P:[B,r,c], U:[1,r,r'], V:[1,c,c'] -> [B,r',c']");
  ops.def(
      "mat",
      [](const std::vector<std::tuple<PyVar, PyVar, PyVar>>& terms, const OptV& bias) {
        std::vector<const PyVar*> ptrs;
        for (const auto& [p, u, v] : terms) ptrs.insert(ptrs.end(), {&p, &u, &v});
        if (bias) ptrs.push_back(&*bias);
        const auto ref = common_tape("mat", ptrs);
        std::vector<MatTerm> t;
        for (const auto& [p, u, v] : terms) t.push_back({p.get(), u.get(), v.get()});
        return wrap(ref, mat(t, get_or_none(bias)));
      },
      py::arg("terms"), py::arg("bias") = py::none(), "Σ_i U_iᵀ P_i V_i + B over terms [(P, U, V), ...]; bias None: none");
  ops.def(
      "projections",
      [](V x, const std::vector<std::tuple<PyVar, PyVar, PyVar>>& projs) {
        std::vector<const PyVar*> ptrs{&x};
        for (const auto& [u, v, b] : projs) ptrs.insert(ptrs.end(), {&u, &v, &b});
        const auto ref = common_tape("projections", ptrs);
        std::vector<Projection> p;
        for (const auto& [u, v, b] : projs) p.push_back({u.get(), v.get(), b.get()});
        std::vector<Var> out(p.size());
        projections(x.get(), p, out);
        return wrap_all(ref, out);
      },
      py::arg("x"), py::arg("projections"), "[U_kᵀ x V_k + B_k for (U_k, V_k, B_k) in projections]");
  ops.def(
      "projections",
      stacked_form("projections", [](Var x, Var us, std::span<const Var> v, std::span<const Var> b,
                                     std::span<Var> out) { projections(x, us, v, b, out); }),
      py::arg("x"), py::arg("u_stacked"), py::arg("v"), py::arg("b"),
      "projections' matrix form on U_s = stack_columns(U_1..U_K): [(U_sᵀ x)_k V_k + B_k]; x [B,r,c], V_k "
      "[1,c,c'_k], B_k [1,r'_k,c'_k]");
  ops.def(
      "stacked_projections",
      stacked_form("stacked_projections", [](Var x, Var vs, std::span<const Var> u, std::span<const Var> b,
                                             std::span<Var> out) { stacked_projections(x, vs, u, b, out); }),
      py::arg("x"), py::arg("v_stacked"), py::arg("u"), py::arg("b"),
      "projections' vector form on V_s = stack_columns(V_1..V_K): [u_k (x V_s)_k + B_k]; x [B,1,c], u_k [1,1,1], "
      "B_k [1,1,c'_k]");
  ops.def(
      "stacked_mats",
      [](const std::vector<PyVar>& xs, const std::vector<PyVar>& vs, const std::vector<PyVar>& us,
         const std::vector<PyVar>& bs) {
        std::vector<const PyVar*> ptrs;
        add_all(ptrs, xs);
        add_all(ptrs, vs);
        add_all(ptrs, us);
        add_all(ptrs, bs);
        const auto ref = common_tape("stacked_mats", ptrs);
        const std::vector<Var> x = gets(xs), v = gets(vs), u = gets(us), b = gets(bs);
        std::vector<Var> out(b.size());
        stacked_mats(x, v, u, b, out);
        return wrap_all(ref, out);
      },
      py::arg("x"), py::arg("v_stacked"), py::arg("u"), py::arg("b"),
      "several mats into rows of the same terms: [Σ_t u[t G + g]ᵀ (x_t V_s[t])_g + B_g for g < G], V_s[t] = "
      "stack_columns(V_t,1..V_t,G); x_t [B,r_t,c_t], u [1,r_t,1], B_g [1,1,c'_g]");

  MATMEM_BINARY(add, a, b, "a + b, broadcasting (a size of 1 along an axis broadcasts)");
  MATMEM_BINARY(sub, a, b, "a - b, broadcasting as add");
  MATMEM_BINARY(hadamard, a, b, "a ⊙ b, broadcasting as add");
  ops.def("scale", [](V x, double a) { return wrap(tape_of("scale", x), scale(x.get(), a)); }, py::arg("x"),
          py::arg("a"), "a x");
  ops.def("affine", [](V x, double a, double b) { return wrap(tape_of("affine", x), affine(x.get(), a, b)); },
          py::arg("x"), py::arg("a"), py::arg("b"), "a x + b");
  MATMEM_UNARY(one_minus, "1 - x");
  MATMEM_UNARY(sigmoid, "1 / (1 + e^-x)");
  MATMEM_UNARY(tanh, "tanh x");
  MATMEM_UNARY(relu, "max(x, 0)");
  ops.def("clip", [](V x, double c) { return wrap(tape_of("clip", x), clip(x.get(), c)); }, py::arg("x"),
          py::arg("c"), "min(max(x, −c), c); its gradient passes for −c ≤ x ≤ c, zero outside");
  ops.def("clip_gradient", [](V x, double c) { return wrap(tape_of("clip_gradient", x), clip_gradient(x.get(), c)); },
          py::arg("x"), py::arg("c"), "x; backward passes the upstream gradient clipped to ±c element by element");
  MATMEM_UNARY(softplus, "log(1 + e^x)");
  MATMEM_UNARY(exp, "e^x");
  MATMEM_UNARY(softmax, "softmax along the last axis");
  MATMEM_UNARY(sum, "Σ of all elements -> [1,1,1]");
  MATMEM_UNARY(mean, "mean of all elements -> [1,1,1]");
  ops.def(
      "layer_norm",
      [](V x, const std::string& over, double eps) {
        if (over != "matrix" && over != "rows")
          throw py::value_error("layer_norm: over must be 'matrix' or 'rows', got '" + over + "'");
        return wrap(tape_of("layer_norm", x),
                    layer_norm(x.get(), over == "rows" ? LayerNormOver::rows : LayerNormOver::matrix, eps));
      },
      py::arg("x"), py::arg("over") = "matrix", py::arg("eps") = 1e-5,
      "(x − mean)/√(var + eps) over each sample's matrix ('matrix') or each row ('rows')");

  ops.def(
      "batch_norm", [](V x, double eps) { return wrap(tape_of("batch_norm", x), batch_norm(x.get(), eps)); },
      py::arg("x"), py::arg("eps") = 1e-5,
      "(x − μ)/√(σ² + eps) with μ, σ² each matrix element's mean and variance over the batch (a plain tape: its "
      "own batch)");

  ops.def(
      "cosine_similarity",
      [](const py::object& keys, V memory, double product_eps, double norm_eps) {
        const CosineEps eps{product_eps, norm_eps};
        if (py::isinstance<PyVar>(keys)) {
          const PyVar& k = keys.cast<const PyVar&>();
          return py::cast(wrap(tape_of("cosine_similarity", k, memory), cosine_similarity(k.get(), memory.get(), eps)));
        }
        const auto ks = keys.cast<std::vector<PyVar>>();
        std::vector<const PyVar*> ptrs{&memory};
        add_all(ptrs, ks);
        const auto ref = common_tape("cosine_similarity", ptrs);
        return py::cast(wrap(ref, cosine_similarity(gets(ks), memory.get(), eps)));
      },
      py::arg("key"), py::arg("memory"), py::arg("product_eps") = CosineEps{}.product,
      py::arg("norm_eps") = CosineEps{}.norm,
      "cos(K, M_i) = <K, M_i> / (|K| |M_i| + product_eps), |x| = sqrt(sum x^2 + norm_eps): key [B,r,c] -> "
      "[B,1,N]; a list of H keys -> [B,H,N]. memory [B,N,r,c]");
  ops.def("row", [](V x, std::int64_t h) { return wrap(tape_of("row", x), row(x.get(), h)); }, py::arg("x"),
          py::arg("h"), "row h of x [B,H,N] -> [B,1,N]");
  ops.def(
      "stack_rows",
      [](const std::vector<PyVar>& parts) {
        const auto ref = tape_of_list("stack_rows", parts);
        return wrap(ref, stack_rows(gets(parts)));
      },
      py::arg("parts"), "the parts' rows one below the other: a list of 1 to 64 [B,r_k,c] -> [B,Σr_k,c]");
  ops.def(
      "stack_columns",
      [](const std::vector<PyVar>& parts) {
        const auto ref = tape_of_list("stack_columns", parts);
        return wrap(ref, stack_columns(gets(parts)));
      },
      py::arg("parts"), "the parts' columns side by side: a list of 1 to 64 [B,r,c_k] -> [B,r,Σc_k]");
  ops.def(
      "layer_norm_moments",
      [](const std::vector<PyVar>& parts, double eps) {
        const auto ref = tape_of_list("layer_norm_moments", parts);
        return wrap(ref, layer_norm_moments(gets(parts), eps));
      },
      py::arg("parts"), py::arg("eps") = 1e-6,
      "mean (row 0) and 1/√(var + eps) (row 1) of every element of the parts, per sample: a list of 1 to 64 "
      "[B,r_k,c_k] -> [B,2,1]");
  ops.def(
      "layer_norm_joint",
      [](const std::vector<PyVar>& parts, double eps) {
        const auto ref = tape_of_list("layer_norm_joint", parts);
        std::vector<Var> out(parts.size());
        layer_norm_joint(gets(parts), out, eps);
        std::vector<PyVar> result;
        for (const Var& v : out) result.push_back(wrap(ref, v));
        return result;
      },
      py::arg("parts"), py::arg("eps") = 1e-6,
      "the parts normalised as one group per sample, (x_k − mean)/√(var + eps): a list of [B,r_k,c_k] -> the same");
  MATMEM_BINARY(circular_shift, w, s, "w̃_i = Σ_j s_j w_(i-j mod N). w [B,1,N], s [B,1,2S+1]");
  MATMEM_BINARY(sharpen, w, gamma, "(w_i + ε)^γ normalised. w [B,1,N] ≥ 0, gamma [B,1,1]");
  ops.def(
      "ntm_addressing",
      [](V similarity, std::int64_t head, V beta, V gate, V shift, V gamma, V w_prev) {
        const auto ref = tape_of("ntm_addressing", similarity, beta, gate, shift, gamma, w_prev);
        return wrap(ref, ntm_addressing(similarity.get(), head, beta.get(), gate.get(), shift.get(), gamma.get(),
                                        w_prev.get()));
      },
      py::arg("similarity"), py::arg("head"), py::arg("beta"), py::arg("gate"), py::arg("shift"), py::arg("gamma"),
      py::arg("w_prev"), "one NTM head's weighting from row `head` of the similarities [B,H,N]");
  MATMEM_BINARY(memory_read, memory, w, "Σ_i w_i M_i. memory [B,N,r,c], w [B,1,N] -> [B,r,c]");
  ops.def(
      "memory_write",
      [](V memory, V w, V erase, V add) {
        return wrap(tape_of("memory_write", memory, w, erase, add),
                    memory_write(memory.get(), w.get(), erase.get(), add.get()));
      },
      py::arg("memory"), py::arg("w"), py::arg("erase"), py::arg("add"), "M_i ⊙ (1 - w_i E) + w_i A");
  ops.def(
      "memory_read_write",
      [](V memory, const std::vector<PyVar>& read_weights, V w, V erase, V add) {
        std::vector<const PyVar*> ptrs{&memory, &w, &erase, &add};
        add_all(ptrs, read_weights);
        const auto ref = common_tape("memory_read_write", ptrs);
        std::vector<Var> out(1 + read_weights.size());
        memory_read_write(memory.get(), gets(read_weights), w.get(), erase.get(), add.get(), out);
        return wrap_all(ref, out);
      },
      py::arg("memory"), py::arg("read_weights"), py::arg("w"), py::arg("erase"), py::arg("add"),
      "[memory_write(M, w, E, A), memory_read(M, r_1), ...]: the reads see M before the write");

  MATMEM_BINARY(bce_with_logits, logits, target, "mean BCE of sigmoid(logits) against target -> [1,1,1]");
  MATMEM_BINARY(mse, x, target, "mean of (x - target)^2 -> [1,1,1]");
  MATMEM_BINARY(softmax_cross_entropy, logits, target, "-(1/rows) Σ t log softmax(x) along the last axis");

  // The ops with headers of their own.
  MATMEM_BINARY(frobenius, a, b, "⟨a_b, b_b⟩_F per sample: [B,r,c] x [B,r,c] -> [B,1,1]");
  MATMEM_UNARY(transpose, "xᵀ of every matrix: [B,r,c] -> [B,c,r]");
  MATMEM_BINARY(vec_outer, a, b, "vec(a_b) vec(b_b)ᵀ: [B,r,c] x [B,r',c'] -> [B,rc,r'c']");
  MATMEM_BINARY(vec_matvec, m, x, "m_b vec(x_b) as [B,r,c]: m [B,rc,rc]");
  MATMEM_BINARY(attention_read, queries, rows, "k soft reads of the rows of P: Q [B,k,d], P [B,m,d] -> [B,k,d]");

  // The DNC's memory management (ops/dnc.hpp).
  ops.def(
      "dnc_usage",
      [](V u_prev, V w_write_prev, const std::vector<PyVar>& free_gates, const std::vector<PyVar>& read_weights_prev) {
        std::vector<const PyVar*> ptrs{&u_prev, &w_write_prev};
        add_all(ptrs, free_gates);
        add_all(ptrs, read_weights_prev);
        const auto ref = common_tape("dnc_usage", ptrs);
        const std::vector<Var> f = gets(free_gates), w = gets(read_weights_prev);
        return wrap(ref, dnc_usage(u_prev.get(), w_write_prev.get(), f, w));
      },
      py::arg("u_prev"), py::arg("w_write_prev"), py::arg("free_gates"), py::arg("read_weights_prev"),
      "u_t = (u + w^w - u ⊙ w^w) ⊙ Π_i (1 - f_i w^r_i); no gradient to w_write_prev. [B,1,N], f_i [B,1,1]");
  MATMEM_UNARY(dnc_allocation, "a[φ_j] = (1 - û[φ_j]) Π_{k<j} û[φ_k], φ ascending usage: [B,1,N] -> [B,1,N]");
  ops.def(
      "dnc_link",
      [](V link_prev, V precedence_prev, V w_write) {
        return wrap(tape_of("dnc_link", link_prev, precedence_prev, w_write),
                    dnc_link(link_prev.get(), precedence_prev.get(), w_write.get()));
      },
      py::arg("link_prev"), py::arg("precedence_prev"), py::arg("w_write"),
      "L[i,j] = (1 - w_i - w_j) L[i,j] + w_i p_j, zero diagonal: L [B,N,N], p, w [B,1,N]");
  MATMEM_BINARY(dnc_precedence, precedence_prev, w_write, "p_t = (1 - Σ w) p + w: [B,1,N]");
  MATMEM_BINARY(dnc_forward_weighting, link, read_weight_prev, "L w: L [B,N,N], w [B,1,N] -> [B,1,N]");
  MATMEM_BINARY(dnc_backward_weighting, link, read_weight_prev, "Lᵀ w: L [B,N,N], w [B,1,N] -> [B,1,N]");
  ops.def(
      "dnc_read_weighting",
      [](V modes, V backward, V content, V forward, bool fallback) {
        return wrap(tape_of("dnc_read_weighting", modes, backward, content, forward),
                    dnc_read_weighting(modes.get(), backward.get(), content.get(), forward.get(), fallback));
      },
      py::arg("modes"), py::arg("backward"), py::arg("content"), py::arg("forward"), py::arg("fallback") = false,
      "π_0 b + π_1 c + π_2 f: modes [B,1,3], b, c, f [B,1,N]; fallback: content also takes what b and f do not place");

  // Graphs: the batch lanes are a graph's nodes (ops/graph.hpp). A tape keeps the graph alive until clear().
  py::class_<Neighbours, std::shared_ptr<Neighbours>>(m, "Neighbours",
                                                       "A graph in CSR form: node i reads index[offsets[i]:offsets[i+1]].")
      .def(py::init([](std::vector<std::int64_t> offsets, std::vector<std::int64_t> index) {
             auto g = std::make_shared<Neighbours>();
             g->offsets = std::move(offsets);
             g->index = std::move(index);
             g->check();
             return g;
           }),
           py::arg("offsets"), py::arg("index"))
      .def_property_readonly("nodes", &Neighbours::nodes);
  ops.def(
      "neighbour_mean",
      [](V x, const std::shared_ptr<Neighbours>& graph) {
        const auto ref = tape_of("neighbour_mean", x);
        ref->keep.push_back(graph);
        return wrap(ref, neighbour_mean(x.get(), *graph));
      },
      py::arg("x"), py::arg("graph"), "mean of each node's neighbours' matrices");
  ops.def(
      "neighbour_attention",
      [](V x, const std::vector<PyVar>& queries, const std::shared_ptr<Neighbours>& graph) {
        std::vector<const PyVar*> ptrs{&x};
        add_all(ptrs, queries);
        const auto ref = common_tape("neighbour_attention", ptrs);
        ref->keep.push_back(graph);
        return wrap(ref, neighbour_attention(x.get(), gets(queries), *graph));
      },
      py::arg("x"), py::arg("queries"), py::arg("graph"), "attention heads over each node's neighbours");
  ops.def(
      "neighbour_stack",
      [](V x, const std::shared_ptr<Neighbours>& graph, std::int64_t k) {
        const auto ref = tape_of("neighbour_stack", x);
        ref->keep.push_back(graph);
        return wrap(ref, neighbour_stack(x.get(), *graph, k));
      },
      py::arg("x"), py::arg("graph"), py::arg("k"), "each node's first k neighbours side by side");
}

}  // namespace matmem::python
