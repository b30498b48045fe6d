"""Ops written in Python (matmem.register_op): used on a tape, registered in the op registry, gradchecked like
a C++ op; an exception inside one reaches the caller as itself and leaves the interpreter and tape usable."""
import numpy as np
import pytest

import matmem
from matmem import ops


def square_forward(x):
    return x * x


def square_backward(x, y, grad_y):
    return 2 * x * grad_y


def bmm_forward(a, b):  # per-sample matrix product [B,r,k] x [B,k,c] -> [B,r,c]
    return a @ b


def bmm_backward(a, b, y, g):
    return g @ b.transpose(0, 2, 1), a.transpose(0, 2, 1) @ g


def bmm_shape(sa, sb):
    return (sa[0], sa[1], sb[2])


square = matmem.register_op("py_square", square_forward, square_backward, sample_shapes=[(3, 2, 4)])
bmm = matmem.register_op("py_bmm", bmm_forward, bmm_backward, output_shape=bmm_shape,
                         sample_shapes=[(3, 2, 4), (3, 4, 5)])


def test_a_python_op_computes_on_the_tape():
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    tape = matmem.Tape(np.float32)
    v = tape.input(x, requires_grad=True)
    y = square(v)
    assert isinstance(y, matmem.Var) and y.dtype == np.float32
    np.testing.assert_array_equal(y.value(), x * x)
    tape.backward(ops.sum(y))
    np.testing.assert_array_equal(v.grad(), 2 * x)


def test_it_is_registered_and_reachable_by_name():
    assert "py_square" in matmem.op_names() and "py_bmm" in matmem.op_names()
    assert ops.py_square is square
    assert square.name == "py_square"


@pytest.mark.parametrize("name", ["py_square", "py_bmm"])
def test_registry_gradcheck(name):
    report = matmem.gradcheck_op(name)
    assert report.passed, str(report)
    assert report.elements_checked > 0


def test_gradcheck_of_a_function_mixing_python_and_cpp_ops():
    rng = np.random.default_rng(5)

    def fn(tape, a, b):
        return ops.tanh(bmm(square(a), ops.sigmoid(b)))

    report = matmem.gradcheck(fn, [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 2))],
                              full_jacobian=True)
    assert report.passed, str(report)


def test_a_wrong_backward_fails_gradcheck_and_is_named():
    wrong = matmem.register_op("py_square_wrong_sign", square_forward, lambda x, y, g: -2 * x * g,
                               sample_shapes=[(2, 2, 2)])
    report = matmem.gradcheck_op("py_square_wrong_sign")
    assert not report.passed
    rng = np.random.default_rng(6)
    report = matmem.gradcheck(lambda t, x: ops.tanh(wrong(x)), [rng.standard_normal((2, 2, 2))])
    assert not report.passed
    assert "py_square_wrong_sign" in report.failing_op


def test_none_gradient_for_an_input_without_one():
    scaled = matmem.register_op("py_scaled_by", lambda x, s: x * s, lambda x, s, y, g: (g * s, None),
                                sample_shapes=[(2, 2, 2), (2, 2, 2)])
    tape = matmem.Tape(np.float64)
    x = tape.input(np.ones((2, 2, 2)), requires_grad=True)
    s = tape.input(np.full((2, 2, 2), 3.0), requires_grad=True)
    tape.backward(ops.sum(scaled(x, s)))
    np.testing.assert_array_equal(x.grad(), np.full((2, 2, 2), 3.0))
    np.testing.assert_array_equal(s.grad(), np.zeros((2, 2, 2)))


class Boom(Exception):
    pass


def test_an_exception_in_forward_reaches_the_caller():
    def forward(x):
        raise Boom("forward blew up")

    op = matmem.register_op("py_forward_raises", forward, square_backward, sample_shapes=[(1, 1, 1)])
    tape = matmem.Tape(np.float64)
    x = tape.input(np.ones((1, 2, 2)), requires_grad=True)
    with pytest.raises(Boom, match="forward blew up"):
        op(x)
    with pytest.raises(Boom, match="forward blew up"):  # through C++ gradcheck too
        matmem.gradcheck(lambda t, v: op(v), [np.ones((1, 2, 2))])
    # the interpreter and the tape go on
    tape.backward(ops.sum(square(x)))
    np.testing.assert_array_equal(x.grad(), np.full((1, 2, 2), 2.0))


def test_an_exception_in_backward_reaches_the_caller():
    def backward(x, y, g):
        raise ValueError("backward blew up")

    op = matmem.register_op("py_backward_raises", square_forward, backward, sample_shapes=[(1, 1, 1)])
    tape = matmem.Tape(np.float64)
    x = tape.input(np.ones((1, 2, 2)), requires_grad=True)
    y = ops.sum(op(x))
    with pytest.raises(ValueError, match="backward blew up") as e:
        tape.backward(y)
    assert e.traceback[-1].name == "backward"  # the Python traceback survives the trip through C++
    tape.clear()
    x = tape.input(np.ones((1, 2, 2)), requires_grad=True)
    tape.backward(ops.sum(square(x)))
    np.testing.assert_array_equal(x.grad(), np.full((1, 2, 2), 2.0))


def test_bad_results_of_a_python_op_are_refused():
    tape = matmem.Tape(np.float64)
    x = tape.input(np.ones((1, 2, 2)), requires_grad=True)
    bad_shape = matmem.register_op("py_bad_shape", lambda x: np.ones((1, 2, 3)), square_backward,
                                   sample_shapes=[(1, 2, 2)])
    with pytest.raises(matmem.ShapeError, match=r"op py_bad_shape: its forward's result: expected shape \(1, 2, 2\), got \(1, 2, 3\)"):
        bad_shape(x)
    bad_count = matmem.register_op("py_bad_count", lambda a, b: a + b, lambda a, b, y, g: g,
                                   sample_shapes=[(1, 2, 2), (1, 2, 2)])
    with pytest.raises(ValueError, match="op py_bad_count: its backward must return 2 gradients"):
        tape.backward(ops.sum(bad_count(x, x)))
    with pytest.raises(TypeError, match="expected matmem.Var operands, got ndarray"):
        square(np.ones((1, 2, 2)))


def test_names_are_unique_and_samples_required():
    with pytest.raises(matmem.Error, match="an op named py_square is already registered"):
        matmem.register_op("py_square", square_forward, square_backward, sample_shapes=[(1, 1, 1)])
    with pytest.raises(matmem.Error, match="an op named tanh is already registered"):
        matmem.register_op("tanh", square_forward, square_backward, sample_shapes=[(1, 1, 1)])
    with pytest.raises(ValueError, match="sample_shapes must list"):
        matmem.register_op("py_no_samples", square_forward, square_backward, sample_shapes=[])
