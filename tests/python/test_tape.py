"""The tape from Python: inputs, constants, parameters, backward (scalar and seeded), clear, and Vars of a
cleared tape refused."""
import numpy as np
import pytest

import matmem
from matmem import ops


def test_backward_gives_the_gradient_of_a_scalar():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4))
    tape = matmem.Tape(np.float64)
    v = tape.input(x, requires_grad=True)
    y = ops.sum(ops.hadamard(v, v))
    assert y.shape == (1, 1, 1)
    assert y.item() == pytest.approx((x * x).sum())
    tape.backward(y)
    np.testing.assert_allclose(v.grad(), 2 * x)


def test_backward_with_a_seed():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 3))
    seed = rng.standard_normal((2, 2, 3))
    tape = matmem.Tape(np.float64)
    v = tape.input(x, requires_grad=True)
    tape.backward(ops.scale(v, 3.0), seed)
    np.testing.assert_allclose(v.grad(), 3 * seed)


def test_parameters_accumulate_their_gradient_across_passes():
    store = matmem.ParameterStore(np.float64)
    w = store.add("w", np.full((1, 2, 2), 0.5))
    assert store.names() == ["w"]
    tape = matmem.Tape(np.float64)
    for _ in range(2):
        x = tape.input(np.ones((3, 2, 2)))
        tape.backward(ops.sum(ops.hadamard(x, tape.param(w))))
        tape.clear()
    np.testing.assert_allclose(w.grad, np.full((1, 2, 2), 6.0))  # 3 samples, 2 passes
    store.zero_grad()
    np.testing.assert_array_equal(store["w"].grad, np.zeros((1, 2, 2)))
    w.value = np.zeros((1, 2, 2))
    np.testing.assert_array_equal(w.value, np.zeros((1, 2, 2)))
    with pytest.raises(TypeError, match="expected a float64 array"):
        w.value = np.zeros((1, 2, 2), np.float32)
    with pytest.raises(matmem.ShapeError, match=r"expected shape \(1, 2, 2\)"):
        w.value = np.zeros((1, 2, 3))


def test_constant_and_operators():
    tape = matmem.Tape(np.float32)
    c = tape.constant((2, 1, 3), 2.0)
    x = tape.input(np.ones((2, 1, 3), np.float32))
    y = 1.0 - (c * x + 2.0 * x - c) * 3.0
    np.testing.assert_allclose(y.value(), np.full((2, 1, 3), 1.0 - 6.0))


def test_a_var_of_a_cleared_tape_is_refused():
    tape = matmem.Tape(np.float64)
    v = tape.input(np.ones((1, 2, 2)), requires_grad=True)
    tape.clear()
    assert not v.valid
    for use in (v.value, v.grad, v.item, lambda: ops.tanh(v), lambda: tape.backward(v)):
        with pytest.raises(matmem.Error, match="tape pass that has ended"):
            use()
    assert "cleared" in repr(v)
    # the tape goes on
    w = tape.input(np.ones((1, 1, 1)), requires_grad=True)
    tape.backward(ops.scale(w, 2.0))
    assert w.grad()[0, 0, 0] == 2.0


def test_with_block_ends_the_pass():
    with matmem.Tape(np.float64) as tape:
        v = tape.input(np.ones((1, 1, 1)))
        assert v.item() == 1.0
    with pytest.raises(matmem.Error, match="tape pass that has ended"):
        v.item()


def test_operands_of_two_tapes_are_refused():
    a = matmem.Tape(np.float64).input(np.ones((1, 2, 2)))
    b = matmem.Tape(np.float64).input(np.ones((1, 2, 2)))
    with pytest.raises(matmem.Error, match="different tapes"):
        ops.add(a, b)


def test_cpp_errors_keep_their_message():
    tape = matmem.Tape(np.float64)
    x = tape.input(np.ones((2, 2, 2)))
    with pytest.raises(matmem.ShapeError) as e:
        tape.backward(x)
    assert "backward: output [2,2,2] has 8 elements; give a seed gradient of that shape" in str(e.value)
    with pytest.raises(matmem.ShapeError, match="item: "):
        x.item()


def test_no_grad_records_values_only():
    tape = matmem.Tape(np.float64)
    x = tape.input(np.ones((1, 2, 2)), requires_grad=True)
    with tape.no_grad():
        y = ops.tanh(x)
    assert not y.requires_grad
    assert ops.tanh(x).requires_grad


def test_released_gradients_are_refused_unless_retained():
    tape = matmem.Tape(np.float64)
    x = tape.input(np.ones((1, 2, 2)), requires_grad=True)
    h = ops.tanh(x)
    tape.backward(ops.sum(h))
    with pytest.raises(matmem.Error, match="was released after backward used it"):
        h.grad()
    tape.clear()
    tape.retain_grads = True
    x = tape.input(np.ones((1, 2, 2)), requires_grad=True)
    h = ops.tanh(x)
    tape.backward(ops.sum(h))
    np.testing.assert_array_equal(h.grad(), np.ones((1, 2, 2)))


def test_dtypes_by_name_and_refused():
    assert matmem.Tape("float64").dtype == np.float64
    assert matmem.Tape().dtype == np.float32
    assert matmem.ParameterStore(np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="expected dtype float32 or float64, got <class 'numpy.int32'>"):
        matmem.Tape(np.int32)
