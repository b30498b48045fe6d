// Conversions between matmem tensors and xtensor arrays in logical order: [B,r,c] for a batch of
// matrices (slots = 1), [B,N,r,c] for a memory, [r,c] accepted as a parameter. Include it where xtensor is
// wanted (analysis, tests, user code); the engine's headers do not, to keep builds light.
#pragma once
#include <xtensor/xarray.hpp>

#include "matmem/runtime/error.hpp"
#include "matmem/runtime/tensor.hpp"

namespace matmem {

template <class T>
xt::xarray<T> to_xarray(TensorView<const T> v) {
  const Shape& s = v.shape;
  xt::xarray<T> a = s.slots == 1 ? xt::xarray<T>::from_shape({std::size_t(s.batch), std::size_t(s.rows), std::size_t(s.cols)})
                                 : xt::xarray<T>::from_shape({std::size_t(s.batch), std::size_t(s.slots),
                                                              std::size_t(s.rows), std::size_t(s.cols)});
  std::size_t k = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t n = 0; n < s.slots; ++n)
      for (std::int64_t i = 0; i < s.rows; ++i)
        for (std::int64_t j = 0; j < s.cols; ++j) a.data()[k++] = v.at(b, n, i, j);
  return a;
}

template <class T>
Tensor from_xarray(const xt::xarray<T>& a) {
  Shape s;
  const auto& d = a.shape();
  if (d.size() == 2) s = parameter(d[0], d[1]);
  else if (d.size() == 3) s = matrices(d[0], d[1], d[2]);
  else if (d.size() == 4) s = memory(d[0], d[1], d[2], d[3]);
  else throw ShapeError("from_xarray: expected 2 ([r,c]), 3 ([B,r,c]) or 4 ([B,N,r,c]) dimensions");
  Tensor t(dtype_of<T>(), s);
  TensorView<T> v = t.view<T>();
  std::size_t k = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t n = 0; n < s.slots; ++n)
      for (std::int64_t i = 0; i < s.rows; ++i)
        for (std::int64_t j = 0; j < s.cols; ++j) v.at(b, n, i, j) = a.data()[k++];
  return t;
}

}  // namespace matmem
