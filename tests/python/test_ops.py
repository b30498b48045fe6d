"""Every op from Python: reachable by its C++ name under matmem.ops, and gradchecked in float64 through
matmem.gradcheck (autodiff/gradcheck.hpp: a random standard-normal upstream gradient, central differences)."""
import numpy as np
import pytest

import matmem
from matmem import ops

# Registered ops deliberately not reachable from Python, with the reason (none at present).
# Registered ops with no Python binding yet, and why.
NOT_BOUND = {
    "ntm_addressing_heads": "several heads' ntm_addressing in one call, for the MatNTM step; ntm_addressing is bound",
    "ntm_addressing_logits": "ntm_addressing_heads from the heads' logits, for the MatNTM step; ntm_addressing is bound",
    "memory_writes": "every write of a step in one pass, not used by any model (ops/README.md, Many heads)",
}

B, R, C, N = 3, 2, 3, 4  # batch, rows, cols, memory slots
rng = np.random.default_rng(7)


def u(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape)


def away_from_zero(*shape):  # for relu, whose derivative jumps at 0
    x = u(*shape)
    return np.sign(x) * (0.2 + np.abs(x))


def prob(*shape):  # rows summing to 1
    x = rng.uniform(0.1, 1.0, shape)
    return x / x.sum(axis=-1, keepdims=True)


def apart_usages(B, N):  # each sample's usages a permutation of (k + 0.5)/N: the sort's order never flips
    return np.stack([(rng.permutation(N) + 0.5) / N for _ in range(B)]).reshape(B, 1, N)


GRAPH = matmem.Neighbours([0, 2, 3, 3], [1, 2, 0])  # node 0 reads 1 and 2, node 1 reads 0, node 2 none


def proj(t, x, u0, v0, b0, u1, v1, b1):
    a, b = ops.projections(x, [(u0, v0, b0), (u1, v1, b1)])
    return ops.add(a, ops.scale(b, 0.5))


def stacked(t, x1, x2, v0, v1, u0, u1, b0, b1):
    vs = ops.stack_columns([v0, v1])  # one V_s for two time steps' x
    a0, a1 = ops.stacked_projections(x1, vs, [u0, u1], [b0, b1])
    c0, c1 = ops.stacked_projections(x2, vs, [u0, u1], [b0, b1])
    return ops.add(ops.hadamard(a0, c1), ops.hadamard(a1, c0))


def stacked_u(t, x1, x2, u0, u1, v0, v1, b0, b1):
    us = ops.stack_columns([u0, u1])  # one U_s for two time steps' x
    a0, a1 = ops.projections(x1, us, [v0, v1], [b0, b1])
    c0, c1 = ops.projections(x2, us, [v0, v1], [b0, b1])
    return ops.add(ops.hadamard(a0, c1), ops.hadamard(c0, a1))  # the one-row outputs broadcast


def mats(t, x1, x2, v11, v12, v21, v22, u11, u12, u21, u22, b1, b2):
    vs = [ops.stack_columns([v11, v12]), ops.stack_columns([v21, v22])]  # a row term and a frame of two rows
    y1, y2 = ops.stacked_mats([x1, x2], vs, [u11, u12, u21, u22], [b1, b2])
    return ops.add(ops.hadamard(y1, y1), ops.scale(y2, 0.5))


def read_write(t, m, r0, r1, w, e, a, w2):
    out = ops.memory_read_write(m, [r0, r1], w, e, a)
    assert len(out) == 3
    return ops.add(ops.memory_read(out[0], w2), ops.add(out[1], ops.scale(out[2], 2.0)))


# name -> (fn(tape, *vars) -> Var, inputs, differentiable or None, extra gradcheck keywords)
CASES = {
    "bilinear": (lambda t, p, a, b: ops.bilinear(p, a, b), [u(B, R, C), u(1, R, 2), u(1, C, 4)], None, {}),
    "mat": (lambda t, p, a, b, q, c, d, bias: ops.mat([(p, a, b), (q, c, d)], bias),
            [u(B, R, C), u(1, R, 2), u(1, C, 4), u(B, 3, 2), u(1, 3, 2), u(1, 2, 4), u(1, 2, 4)], None, {}),
    "projections": (proj, [u(B, R, C), u(1, R, 2), u(1, C, 2), u(1, 2, 2), u(1, R, 2), u(1, C, 2), u(1, 2, 2)],
                    None, {}),
    "add": (lambda t, a, b, p: ops.add(ops.add(a, b), p), [u(B, R, C), u(B, R, C), u(1, R, C)], None, {}),
    "sub": (lambda t, a, b, s: ops.sub(ops.sub(a, b), s), [u(B, R, C), u(B, R, C), u(B, 1, 1)], None, {}),
    "hadamard": (lambda t, a, b, p: ops.hadamard(ops.hadamard(a, b), p), [u(B, R, C), u(B, R, C), u(1, R, C)],
                 None, {}),
    "scale": (lambda t, x: ops.scale(x, -1.7), [u(B, R, C)], None, {}),
    "affine": (lambda t, x: ops.affine(x, 0.3, 2.0), [u(B, R, C)], None, {}),
    "one_minus": (lambda t, x: ops.one_minus(x), [u(B, R, C)], None, {}),
    "sigmoid": (lambda t, x: ops.sigmoid(x), [u(B, R, C, lo=-3, hi=3)], None, {}),
    "tanh": (lambda t, x: ops.tanh(x), [u(B, R, C, lo=-2, hi=2)], None, {}),
    "relu": (lambda t, x: ops.relu(x), [away_from_zero(B, R, C)], None, {}),
    "clip": (lambda t, x: ops.clip(x, 0.5), [np.sign(v) * np.where(np.abs(np.abs(v) - 0.5) < 0.05, np.abs(v) + 0.1, np.abs(v))
                                             for v in [u(B, R, C)]], None, {}),
    "clip_gradient": (lambda t, x: ops.clip_gradient(x, 1e6), [u(B, R, C)], None, {}),
    "softplus": (lambda t, x: ops.softplus(x), [u(B, R, C, lo=-3, hi=3)], None, {}),
    "exp": (lambda t, x: ops.exp(x), [u(B, R, C)], None, {}),
    "softmax": (lambda t, x: ops.softmax(x), [u(B, R, C, lo=-2, hi=2)], None, {}),
    "sum": (lambda t, x: ops.sum(x), [u(B, R, C)], None, {}),
    "mean": (lambda t, x: ops.mean(x), [u(B, R, C)], None, {}),
    "layer_norm": (lambda t, x: ops.add(ops.layer_norm(x), ops.layer_norm(x, "rows", 1e-3)), [u(B, R, C)], None, {}),
    "layer_norm_moments": (lambda t, a, b: ops.layer_norm_moments([a, b]), [u(B, R, C), u(B, 1, 3)], None, {}),
    "layer_norm_joint": (lambda t, a, b: (lambda y: ops.add(y[0], ops.scale(y[1], 0.7)))(ops.layer_norm_joint([a, b])),
                         [u(B, R, C), u(B, 1, 1)], None, {}),
    "batch_norm": (lambda t, x: ops.batch_norm(x), [u(B, R, C)], None, {}),
    "cosine_similarity": (lambda t, k0, k1, m: ops.add(ops.row(ops.cosine_similarity([k0, k1], m), 1),
                                                         ops.cosine_similarity(k0, m)),
                          [u(B, 2, 2), u(B, 2, 2), u(B, N, 2, 2)], None, {}),
    "row": (lambda t, x: ops.row(x, 1), [u(B, 3, N)], None, {}),
    "stack_rows": (lambda t, a, b: ops.stack_rows([a, b, a]), [u(B, 1, C), u(B, 2, C)], None, {}),
    "stack_columns": (lambda t, a, b: ops.stack_columns([a, b, a]), [u(B, R, 1), u(B, R, 2)], None, {}),
    "stacked_projections": (stacked, [u(B, 1, C), u(B, 1, C), u(1, C, 2), u(1, C, 2), u(1, 1, 1), u(1, 1, 1),
                                      u(1, 1, 2), u(1, 1, 2)], None, {}),
    "projections (U_s)": (stacked_u, [u(B, R, C), u(B, R, C), u(1, R, 2), u(1, R, 1), u(1, C, 2), u(1, C, 2),
                                      u(1, 2, 2), u(1, 1, 2)], None, {}),
    "stacked_mats": (mats, [u(B, 1, C), u(B, 2, 3), u(1, C, 2), u(1, C, 2), u(1, 3, 2), u(1, 3, 2), u(1, 1, 1),
                            u(1, 1, 1), u(1, 2, 1), u(1, 2, 1), u(1, 1, 2), u(1, 1, 2)], None, {}),
    "circular_shift": (lambda t, w, s: ops.circular_shift(w, s), [prob(B, 1, N), prob(B, 1, 3)], None, {}),
    "sharpen": (lambda t, w, g: ops.sharpen(w, g), [prob(B, 1, N), u(B, 1, 1, lo=1.0, hi=3.0)], None, {}),
    "ntm_addressing": (lambda t, sim, beta, g, s, gamma, w: ops.ntm_addressing(sim, 1, beta, g, s, gamma, w),
                       [u(B, 2, N), u(B, 1, 1, lo=0.5, hi=3), u(B, 1, 1, lo=0.1, hi=0.9), prob(B, 1, 3),
                        u(B, 1, 1, lo=1, hi=3), prob(B, 1, N)], None, {}),
    "memory_read": (lambda t, m, w: ops.memory_read(m, w), [u(B, N, 2, 2), prob(B, 1, N)], None, {}),
    "memory_write": (lambda t, m, w, e, a: ops.memory_write(m, w, e, a),
                     [u(B, N, 2, 2), prob(B, 1, N), u(B, 2, 2, lo=0, hi=1), u(B, 2, 2)], None, {}),
    "memory_read_write": (read_write, [u(B, N, 2, 2), prob(B, 1, N), prob(B, 1, N), prob(B, 1, N),
                                       u(B, 2, 2, lo=0, hi=1), u(B, 2, 2), prob(B, 1, N)], None, {}),
    "bce_with_logits": (lambda t, x, y: ops.bce_with_logits(x, y), [u(B, R, C, lo=-3, hi=3), u(B, R, C, lo=0, hi=1)],
                        [True, False], {}),
    "mse": (lambda t, x, y: ops.mse(x, y), [u(B, R, C), u(B, R, C)], None, {}),
    "softmax_cross_entropy": (lambda t, x, y: ops.softmax_cross_entropy(x, y), [u(B, R, C), prob(B, R, C)],
                              [True, False], {}),
    "frobenius": (lambda t, a, b: ops.frobenius(a, b), [u(B, R, C), u(B, R, C)], None, {}),
    "transpose": (lambda t, x: ops.transpose(x), [u(B, R, C)], None, {}),
    "vec_outer": (lambda t, a, b: ops.vec_outer(a, b), [u(B, R, C), u(B, 2, 2)], None, {}),
    "vec_matvec": (lambda t, m, x: ops.vec_matvec(m, x), [u(B, R * C, R * C), u(B, R, C)], None, {}),
    "attention_read": (lambda t, q, p: ops.attention_read(q, p), [u(B, 2, 3), u(B, 4, 3)], None, {}),
    "dnc_usage": (lambda t, up, ww, f0, f1, r0, r1: ops.dnc_usage(up, ww, [f0, f1], [r0, r1]),
                  [u(B, 1, N, lo=0, hi=1), prob(B, 1, N), u(B, 1, 1, lo=0, hi=1), u(B, 1, 1, lo=0, hi=1),
                   prob(B, 1, N), prob(B, 1, N)], [True, False, True, True, True, True], {}),
    "dnc_allocation": (lambda t, x: ops.dnc_allocation(x), [apart_usages(B, N)], None, {}),
    "dnc_link": (lambda t, link, p, w: ops.dnc_link(link, p, w), [u(B, N, N, lo=0, hi=0.3), prob(B, 1, N),
                                                                  prob(B, 1, N)], None, {}),
    "dnc_precedence": (lambda t, p, w: ops.dnc_precedence(p, w), [prob(B, 1, N), prob(B, 1, N)], None, {}),
    "dnc_forward_weighting": (lambda t, link, w: ops.dnc_forward_weighting(link, w), [u(B, N, N), prob(B, 1, N)],
                              None, {}),
    "dnc_backward_weighting": (lambda t, link, w: ops.dnc_backward_weighting(link, w), [u(B, N, N), prob(B, 1, N)],
                               None, {}),
    "dnc_read_weighting": (lambda t, m, b, c, f: ops.add(ops.dnc_read_weighting(m, b, c, f),
                                                         ops.dnc_read_weighting(m, ops.scale(b, 0.5), c, f, True)),
                           [prob(B, 1, 3), prob(B, 1, N), prob(B, 1, N), prob(B, 1, N)], None, {}),
    "neighbour_mean": (lambda t, x: ops.neighbour_mean(x, GRAPH), [u(3, R, C)], None, {}),
    "neighbour_attention": (lambda t, x, q0, q1: ops.neighbour_attention(x, [q0, q1], GRAPH),
                            [u(3, R, C), u(3, R, C), u(3, R, C)], None, {}),
    "neighbour_stack": (lambda t, x: ops.neighbour_stack(x, GRAPH, 2), [u(3, R, C)], None, {}),
}

BUILT_IN = [name for name in matmem.op_names() if not isinstance(getattr(ops, name, None), matmem.PythonOp)]


def test_every_registered_op_is_reachable_by_its_name():
    for name in BUILT_IN:
        assert hasattr(ops, name) or name in NOT_BOUND, f"registered op {name} is not in matmem.ops"


def test_every_bound_op_is_gradchecked_here():
    bound = {n for n in dir(ops) if not n.startswith("_") and callable(getattr(ops, n))
             and not isinstance(getattr(ops, n), matmem.PythonOp)}
    assert bound - set(CASES) == set()


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_from_python(name):
    fn, inputs, differentiable, kw = CASES[name]
    report = matmem.gradcheck(fn, inputs, differentiable=differentiable, full_jacobian=True, **kw)
    assert report.passed, f"{name}: {report}"
    assert report.elements_checked == sum(x.size for x, d in zip(inputs, differentiable or [True] * len(inputs)) if d)


def test_gradcheck_reports_a_wrong_gradient():
    # A function whose gradient the tape cannot know: its input changes a constant the tape does not see.
    captured = []

    def fn(tape, x):
        captured.append(x.value())  # the value leaks into a constant: not differentiated
        return ops.hadamard(x, tape.input(captured[-1].copy()))

    report = matmem.gradcheck(fn, [u(2, 2, 2)], locate_op=False)
    assert not report.passed
    assert report.max_abs_error > 1e-3
    assert report.failures and report.failures[0]["tensor"] == "input 0"
    assert str(report).startswith("FAILED (8 elements")
    assert report.failures[0]["numerical"] == pytest.approx(2 * report.failures[0]["analytical"])


def test_gradcheck_with_parameters_and_named_inputs():
    store = matmem.ParameterStore(np.float64)
    w = store.add("w", u(1, R, C))

    def fn(tape, x):
        return ops.tanh(ops.hadamard(x, tape.param(w)))

    report = matmem.gradcheck(fn, {"x": u(B, R, C)}, store)
    assert report.passed
    assert report.elements_checked == B * R * C + R * C
    with pytest.raises(TypeError, match="float32"):
        matmem.gradcheck(fn, {"x": u(B, R, C)}, matmem.ParameterStore(np.float32))


def test_cpp_op_errors_arrive_with_their_message():
    tape = matmem.Tape(np.float64)
    with pytest.raises(matmem.ShapeError, match=r"bilinear: .*\[2,3,4\]"):
        ops.bilinear(tape.input(u(2, 3, 4)), tape.input(u(1, 2, 2)), tape.input(u(1, 4, 4)))
    with pytest.raises(ValueError, match="over must be 'matrix' or 'rows'"):
        ops.layer_norm(tape.input(u(2, 3, 4)), "cols")
    ops.tanh(tape.input(u(2, 3, 4)))  # the tape goes on


def test_vars_escaping_gradcheck_are_refused():
    kept = []

    def fn(tape, x):
        kept.append(x)
        return ops.tanh(x)

    assert matmem.gradcheck(fn, [u(1, 2, 2)])
    with pytest.raises(matmem.Error, match="tape is gone|pass that has ended"):
        kept[-1].value()


def test_registry_gradcheck_of_builtin_ops():
    for name in ["bilinear", "sharpen", "memory_read_write"]:
        assert matmem.gradcheck_op(name).passed
    with pytest.raises(KeyError, match="no registered op named nope"):
        matmem.gradcheck_op("nope")


def test_errors_of_the_checked_function_reach_the_caller():
    def raises(tape, x):
        raise KeyError("no such thing")

    with pytest.raises(KeyError, match="no such thing"):
        matmem.gradcheck(raises, [u(1, 2, 2)])
    with pytest.raises(TypeError, match="must return a matmem.Var, it returned ndarray"):
        matmem.gradcheck(lambda t, x: x.value(), [u(1, 2, 2)])
    assert matmem.gradcheck(lambda t, x: ops.exp(x), [u(1, 2, 2)])  # and gradcheck goes on working


def test_cosine_similarity_epsilons_reach_the_op():
    # DeepMind's DNC form, eps under each norm's root and on their product, against numpy, at a zero slot too.
    tape = matmem.Tape(np.float64)
    k, m = u(B, R, C), u(B, N, R, C)
    m[:, 1] = 0.0
    y = ops.cosine_similarity(tape.input(k), tape.input(m), product_eps=0.2, norm_eps=0.3).value()
    nk = np.sqrt((k * k).sum(axis=(1, 2)) + 0.3)[:, None]
    nm = np.sqrt((m * m).sum(axis=(2, 3)) + 0.3)
    want = np.einsum("brc,bnrc->bn", k, m) / (nk * nm + 0.2)
    np.testing.assert_allclose(y.reshape(B, N), want, rtol=1e-12, atol=1e-14)
    assert matmem.gradcheck(lambda t, kk, mm: ops.cosine_similarity(kk, mm, norm_eps=0.3), [k, m]).passed
