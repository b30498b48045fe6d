"""numpy <-> matmem conversions (tools/python/convert.hpp): values round-trip in logical order for float32 and
float64, and wrong dtypes, ranks, shapes and non-contiguous arrays are refused with a clear message."""
import numpy as np
import pytest

import matmem


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 2, 5), (1, 4, 4), (2, 1, 7), (3, 4, 2, 5)])
def test_round_trip_keeps_every_element_in_place(dtype, shape):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    tape = matmem.Tape(dtype)
    v = tape.input(x)
    assert v.shape == shape
    assert v.dtype == np.dtype(dtype)
    y = v.value()
    assert y.dtype == np.dtype(dtype)
    assert y.flags.c_contiguous
    np.testing.assert_array_equal(y, x)


def test_ops_see_the_logical_element_order():
    # A matrix's sum over rows through a bilinear map: [1 1 1] P I picks column sums, so a transposing
    # conversion (rows and columns, or samples and rows, swapped) gives other numbers.
    x = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    tape = matmem.Tape(np.float64)
    p = tape.input(x)
    u = tape.input(np.ones((1, 3, 1)))
    v = tape.input(np.eye(4).reshape(1, 4, 4))
    y = matmem.ops.bilinear(p, u, v).value()
    np.testing.assert_array_equal(y, x.sum(axis=1, keepdims=True))


def test_memory_round_trip_per_slot():
    x = np.arange(2 * 3 * 2 * 2, dtype=np.float64).reshape(2, 3, 2, 2)
    tape = matmem.Tape(np.float64)
    m = tape.input(x)
    w = np.zeros((2, 1, 3))
    w[0, 0, 1] = 1.0  # sample 0 reads slot 1, sample 1 slot 2
    w[1, 0, 2] = 1.0
    r = matmem.ops.memory_read(m, tape.input(w)).value()
    np.testing.assert_array_equal(r[0], x[0, 1])
    np.testing.assert_array_equal(r[1], x[1, 2])


def test_values_are_copies():
    x = np.ones((1, 2, 2))
    tape = matmem.Tape(np.float64)
    v = tape.input(x)
    x[...] = 5.0  # the tape took a copy
    a = v.value()
    a[...] = 7.0  # and gives copies
    np.testing.assert_array_equal(v.value(), np.ones((1, 2, 2)))


def test_wrong_dtype_is_refused():
    tape = matmem.Tape(np.float64)
    with pytest.raises(TypeError, match="expected a float64 array, got float32"):
        tape.input(np.zeros((1, 2, 2), np.float32))
    with pytest.raises(TypeError, match="expected a float32 or float64 array, got dtype int64"):
        tape.input(np.zeros((1, 2, 2), np.int64))
    with pytest.raises(TypeError, match="expected a numpy.ndarray"):
        tape.input([[[1.0]]])


def test_wrong_rank_or_size_is_refused():
    tape = matmem.Tape(np.float32)
    with pytest.raises(matmem.ShapeError, match=r"expected a rank-3 array \[B,r,c\].*got shape \(2, 2\)"):
        tape.input(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="every size must be positive"):
        tape.input(np.zeros((0, 2, 2), np.float32))


def test_non_contiguous_array_is_refused():
    tape = matmem.Tape(np.float32)
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="expected a C-contiguous array.*ascontiguousarray"):
        tape.input(x.transpose(0, 2, 1))
    with pytest.raises(ValueError, match="C-contiguous"):
        tape.input(x[:, :, ::2])
    tape.input(np.ascontiguousarray(x[:, :, ::2]))  # and the interpreter goes on


def test_seed_of_wrong_shape_is_refused():
    tape = matmem.Tape(np.float64)
    v = tape.input(np.ones((2, 2, 2)), requires_grad=True)
    y = matmem.ops.tanh(v)
    with pytest.raises(matmem.ShapeError, match=r"seed: expected shape \(2, 2, 2\), got \(2, 2, 3\)"):
        tape.backward(y, np.ones((2, 2, 3)))
