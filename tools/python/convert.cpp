#include "matmem/tools/python/convert.hpp"

#include <cstring>

#include "matmem/runtime/error.hpp"

namespace matmem::python {

namespace {

std::string tuple_str(const py::handle& shape) { return py::str(py::tuple(py::reinterpret_borrow<py::object>(shape))); }

// Copies between a logical C-order buffer [B,N,r,c] and matmem's layout of `shape`.
template <class Src, class Dst>
void logical_to_physical(const Src* src, Dst* dst, const Shape& s) {
  const std::int64_t B = s.batch, N = s.slots, r = s.rows, c = s.cols;
  if (N == 1) {
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < r; ++i) {
        const Src* row = src + (b * r + i) * c;
        Dst* out = dst + (i * B + b) * c;
        for (std::int64_t j = 0; j < c; ++j) out[j] = Dst(row[j]);
      }
    return;
  }
  const std::int64_t per_sample = N * r * c;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t e = 0; e < per_sample; ++e) dst[e * B + b] = Dst(src[b * per_sample + e]);
}

template <class T>
void physical_to_logical(const T* src, T* dst, const Shape& s) {
  const std::int64_t B = s.batch, N = s.slots, r = s.rows, c = s.cols;
  if (N == 1) {
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < r; ++i)
        std::memcpy(dst + (b * r + i) * c, src + (i * B + b) * c, std::size_t(c) * sizeof(T));
    return;
  }
  const std::int64_t per_sample = N * r * c;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t e = 0; e < per_sample; ++e) dst[b * per_sample + e] = src[e * B + b];
}

py::array as_array(const py::handle& obj, const std::string& what) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(what + ": expected a numpy.ndarray of float32 or float64, got " +
                         std::string(py::str(py::type::of(obj).attr("__name__"))));
  return py::reinterpret_borrow<py::array>(obj);
}

Shape checked_shape(const py::array& a, const std::string& what) {
  if (a.ndim() != 3 && a.ndim() != 4)
    throw ShapeError(what + ": expected a rank-3 array [B,r,c] (a batch of matrices; a parameter is [1,r,c]) or "
                            "a rank-4 array [B,N,r,c] (a memory), got shape " +
                     std::string(py::str(a.attr("shape"))));
  return shape_from_tuple(a.attr("shape"), what);
}

void check_contiguous(const py::array& a, const std::string& what) {
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(what + ": expected a C-contiguous array, got one with strides " +
                          std::string(py::str(a.attr("strides"))) +
                          " (a transposed or sliced view): pass numpy.ascontiguousarray(x)");
}

}  // namespace

Shape shape_from_tuple(const py::handle& shape, const std::string& what) {
  py::tuple t;
  try {
    t = py::tuple(py::reinterpret_borrow<py::object>(shape));
  } catch (const py::error_already_set&) {
    throw py::type_error(what + ": expected a shape tuple (B,r,c) or (B,N,r,c)");
  }
  if (t.size() != 3 && t.size() != 4)
    throw ShapeError(what + ": expected a shape (B,r,c) or (B,N,r,c), got " + tuple_str(shape));
  std::int64_t d[4] = {1, 1, 1, 1};
  const std::size_t skip = t.size() == 3 ? 1 : 0;  // (B,r,c): one slot
  for (std::size_t k = 0; k < t.size(); ++k) {
    const std::int64_t v = t[k].cast<std::int64_t>();
    if (v <= 0) throw ShapeError(what + ": every size must be positive, got " + tuple_str(shape));
    d[k == 0 ? 0 : k + skip] = v;
  }
  return {d[0], d[1], d[2], d[3]};
}

py::tuple shape_tuple(const Shape& s) {
  if (s.slots == 1) return py::make_tuple(s.batch, s.rows, s.cols);
  return py::make_tuple(s.batch, s.slots, s.rows, s.cols);
}

DType dtype_of_array(const py::array& a, const std::string& what) {
  if (a.dtype().is(py::dtype::of<float>())) return DType::f32;
  if (a.dtype().is(py::dtype::of<double>())) return DType::f64;
  throw py::type_error(what + ": expected a float32 or float64 array, got dtype " + std::string(py::str(a.dtype())));
}

DType dtype_from_python(const py::object& d) {
  const py::dtype dt = py::dtype::from_args(d);
  if (dt.is(py::dtype::of<float>())) return DType::f32;
  if (dt.is(py::dtype::of<double>())) return DType::f64;
  throw py::type_error("expected dtype float32 or float64, got " + std::string(py::str(d)));
}

py::dtype numpy_dtype(DType t) { return t == DType::f32 ? py::dtype::of<float>() : py::dtype::of<double>(); }

Tensor to_tensor(const py::handle& obj, const std::string& what, std::optional<DType> want,
                 std::optional<Shape> shape) {
  const py::array a = as_array(obj, what);
  const DType dt = dtype_of_array(a, what);
  if (want && dt != *want)
    throw py::type_error(what + ": expected a " + std::string(name_of(*want)) + " array, got " +
                         std::string(name_of(dt)) + " (convert it with x.astype(numpy." + std::string(name_of(*want)) +
                         "))");
  const Shape s = checked_shape(a, what);
  if (shape && s != *shape)
    throw ShapeError(what + ": expected shape " + std::string(py::str(shape_tuple(*shape))) + ", got " +
                     std::string(py::str(shape_tuple(s))));
  check_contiguous(a, what);
  Tensor t(dt, s);
  dispatch(dt, [&](auto z) {
    using T = decltype(z);
    logical_to_physical(static_cast<const T*>(a.data()), t.view<T>().data, s);
  });
  return t;
}

template <class T>
void copy_into(const py::handle& obj, TensorView<T> dst, const std::string& what) {
  const py::array a = as_array(obj, what);
  const DType dt = dtype_of_array(a, what);
  const Shape s = checked_shape(a, what);
  if (s != dst.shape)
    throw ShapeError(what + ": expected shape " + std::string(py::str(shape_tuple(dst.shape))) + ", got " +
                     std::string(py::str(shape_tuple(s))));
  check_contiguous(a, what);
  if (dt == DType::f32)
    logical_to_physical(static_cast<const float*>(a.data()), dst.data, s);
  else
    logical_to_physical(static_cast<const double*>(a.data()), dst.data, s);
}
template void copy_into<float>(const py::handle&, TensorView<float>, const std::string&);
template void copy_into<double>(const py::handle&, TensorView<double>, const std::string&);

template <class T>
py::array to_array(TensorView<const T> v) {
  const Shape& s = v.shape;
  std::vector<py::ssize_t> dims{s.batch, s.rows, s.cols};
  if (s.slots != 1) dims.insert(dims.begin() + 1, s.slots);
  py::array_t<T> a(dims);
  physical_to_logical(v.data, a.mutable_data(), v.shape);
  return a;
}
template py::array to_array<float>(TensorView<const float>);
template py::array to_array<double>(TensorView<const double>);

py::array to_array(const Tensor& t) {
  return dispatch(t.dtype(), [&](auto z) -> py::array {
    using T = decltype(z);
    return to_array<T>(t.view<T>());
  });
}

}  // namespace matmem::python
