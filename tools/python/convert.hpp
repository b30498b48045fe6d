// numpy <-> matmem tensors: the one place where the Python module copies elements between the two
// (tools/python/README.md, "Arrays").
//
// A numpy array is C-contiguous with a logical shape: rank 3 [B,r,c] for a batch of matrices (a weighting
// [B,N] is [B,1,N], a per-sample scalar [B,1,1], a parameter [1,r,c]) or rank 4 [B,N,r,c] for a memory.
// matmem stores the same elements in its own physical layout (runtime/shape.hpp: batch-interleaved rows,
// or batch innermost for a memory), so every conversion is a copy that reorders; no array returned to
// Python views matmem memory (the tape's arena is recycled by clear()).
//
// Refusals, each naming what was expected and what came: not a numpy array or not float32/float64
// (TypeError), the wrong dtype where one is required (TypeError), a rank other than 3 or 4, a zero size or a
// shape that does not fit (matmem.ShapeError, a ValueError), a non-C-contiguous array (ValueError).
#pragma once
#include <optional>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "matmem/runtime/shape.hpp"
#include "matmem/runtime/tensor.hpp"

namespace matmem::python {

namespace py = pybind11;

/// The matmem shape of a logical numpy shape: (B,r,c) -> [B,1,r,c], (B,N,r,c) -> [B,N,r,c]. `what` names the
/// value in errors ("input", "seed", "parameter ntm/U").
Shape shape_from_tuple(const py::handle& shape, const std::string& what);
/// The logical numpy shape of a matmem shape: (B,r,c) when it has one slot, else (B,N,r,c).
py::tuple shape_tuple(const Shape& shape);

/// The matmem dtype of a numpy array's dtype; TypeError unless float32 or float64.
DType dtype_of_array(const py::array& a, const std::string& what);
/// The DType a Python dtype argument names (numpy.float32, "float64", numpy.dtype(...)); TypeError otherwise.
DType dtype_from_python(const py::object& dtype);
/// The numpy dtype of a DType.
py::dtype numpy_dtype(DType t);

/// A copy of a numpy array as a Tensor in matmem's layout. `want`: the dtype it must have (TypeError
/// otherwise, no silent conversion); nullopt takes float32 or float64 as they come. `shape`: the shape it
/// must have (ShapeError otherwise).
Tensor to_tensor(const py::handle& obj, const std::string& what, std::optional<DType> want = std::nullopt,
                 std::optional<Shape> shape = std::nullopt);

/// Copies a numpy array into an existing view (of matmem's layout), checking its shape; the array's
/// dtype may be float32 or float64 (converted to T). Used for results of Python kernels.
template <class T>
void copy_into(const py::handle& obj, TensorView<T> dst, const std::string& what);

/// A new C-contiguous numpy array (float32 for float, float64 for double) with a copy of the view's elements
/// in logical order.
template <class T>
py::array to_array(TensorView<const T> v);
/// A copy of a Tensor as a numpy array of its dtype.
py::array to_array(const Tensor& t);

}  // namespace matmem::python
