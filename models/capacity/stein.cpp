#include "matmem/models/capacity/stein.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xcomplex.hpp>
#include <xtensor/xmanipulation.hpp>

#include "matmem/runtime/error.hpp"

namespace matmem::capacity::detail {

RMat to_xt(const Matrix& m) {
  RMat x = RMat::from_shape({m.rows, m.cols});
  std::copy(m.data.begin(), m.data.end(), x.begin());
  return x;
}

Matrix from_xt(const RMat& x) {
  Matrix m(x.shape(0), x.shape(1));
  std::copy(x.begin(), x.end(), m.data.begin());
  return m;
}

double Schur::spectral_radius() const {
  double r = 0;
  for (std::size_t i = 0; i < size(); ++i) r = std::max(r, std::abs(t(i, i)));
  return r;
}

Schur schur(const RMat& a) {
  if (a.dimension() != 2 || a.shape(0) != a.shape(1))
    throw Error(fmt::format("capacity: Schur form needs a square matrix, got {}×{}", a.shape(0), a.shape(1)));
  using ColMajor = xt::xtensor<cplx, 2, xt::layout_type::column_major>;
  const auto n = static_cast<xt::blas_index_t>(a.shape(0));
  Schur s;
  if (n == 0) return s;
  ColMajor t = xt::cast<cplx>(a);
  ColMajor q = ColMajor::from_shape({a.shape(0), a.shape(0)});
  std::vector<cplx> w(a.shape(0));
  std::vector<double> rwork(a.shape(0));
  xt::blas_index_t sdim = 0;
  cplx query;
  // zgees, no eigenvalue ordering (so no select function and no bwork).
  xt::blas_index_t info = cxxlapack::gees<xt::blas_index_t>('V', 'N', nullptr, n, t.data(), n, sdim, w.data(),
                                                            q.data(), n, &query, -1, rwork.data(), nullptr);
  if (info != 0) throw Error(fmt::format("capacity: zgees workspace query failed (info {})", info));
  std::vector<cplx> work(std::max<std::size_t>(1, std::size_t(query.real())));
  info = cxxlapack::gees<xt::blas_index_t>('V', 'N', nullptr, n, t.data(), n, sdim, w.data(), q.data(), n,
                                           work.data(), xt::blas_index_t(work.size()), rwork.data(), nullptr);
  if (info != 0) throw Error(fmt::format("capacity: complex Schur decomposition failed (zgees info {})", info));
  s.q = q;
  s.t = t;
  for (std::size_t i = 0; i < s.size(); ++i)  // zgees leaves round-off below the diagonal at exactly zero
    for (std::size_t j = 0; j < i; ++j) s.t(i, j) = 0;
  return s;
}

template <class T>
static xt::xtensor<T, 2> kron_impl(const xt::xtensor<T, 2>& a, const xt::xtensor<T, 2>& b) {
  const std::size_t m = a.shape(0), n = a.shape(1), p = b.shape(0), q = b.shape(1);
  xt::xtensor<T, 2> k = xt::xtensor<T, 2>::from_shape({m * p, n * q});
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t r = 0; r < p; ++r)
        for (std::size_t c = 0; c < q; ++c) k(i * p + r, j * q + c) = a(i, j) * b(r, c);
  return k;
}

CMat kron(const CMat& a, const CMat& b) { return kron_impl(a, b); }
RMat kron(const RMat& a, const RMat& b) { return kron_impl(a, b); }

Schur kron(const Schur& a, const Schur& b) { return Schur{kron(a.q, b.q), kron(a.t, b.t)}; }

CMat adjoint(const CMat& a) { return xt::conj(xt::transpose(a)); }

CMat complexify(const RMat& a) { return xt::cast<cplx>(a); }

RMat real_part(const CMat& a, const char* what) {
  double scale = 0, imag = 0;
  for (const cplx& z : a) {
    scale = std::max(scale, std::abs(z));
    imag = std::max(imag, std::abs(z.imag()));
  }
  if (imag > 1e-8 * std::max(1.0, scale))
    throw Error(fmt::format("capacity: {} should be real but has imaginary part {:.3g} (scale {:.3g})", what, imag,
                            scale));
  return xt::real(a);
}

CMat solve_stein(const Schur& a, const Schur& b, const CMat& c) {
  const std::size_t n = a.size(), m = b.size();
  if (c.shape(0) != n || c.shape(1) != m)
    throw Error(fmt::format("capacity: Stein equation X − A X B = C with A {0}×{0}, B {1}×{1} needs C {0}×{1}, got {2}×{3}",
                            n, m, c.shape(0), c.shape(1)));
  if (a.spectral_radius() * b.spectral_radius() >= 1.0)
    throw Error(fmt::format("capacity: X − A X B = C needs ρ(A)ρ(B) < 1 for a convergent solution, got {:.6g} · {:.6g}",
                            a.spectral_radius(), b.spectral_radius()));
  if (n == 0 || m == 0) return CMat::from_shape({n, m});
  // c̃ = Qaᴴ C Qb, kept transposed (row j = column j of c̃) so that each column solve is contiguous.
  const CMat ct = xt::transpose(xt::linalg::dot(xt::linalg::dot(adjoint(a.q), c), b.q));
  CMat yt = CMat::from_shape({m, n});  // yᵀ: row j is column j of Y
  // Raw row-major pointers and a plain complex product (no C99 Annex G NaN recovery, which std::complex's
  // operator* calls out for): the loops below are the O(n²m + nm²) core.
  auto mul = [](cplx x, cplx z) {
    return cplx(x.real() * z.real() - x.imag() * z.imag(), x.real() * z.imag() + x.imag() * z.real());
  };
  const cplx* ta = a.t.data();
  const cplx* tb = b.t.data();
  const cplx* ctp = ct.data();
  cplx* y = yt.data();
  std::vector<cplx> s(n), rhs(n);
  for (std::size_t j = 0; j < m; ++j) {
    // s = Σ_{l<j} Tb[l,j] y_l,  rhs = c̃_j + Ta s
    std::fill(s.begin(), s.end(), cplx(0));
    for (std::size_t l = 0; l < j; ++l) {
      const cplx f = tb[l * m + j];
      if (f == cplx(0)) continue;
      const cplx* yl = y + l * n;
      for (std::size_t i = 0; i < n; ++i) s[i] += mul(f, yl[i]);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const cplx* row = ta + i * n;
      cplx acc = ctp[j * n + i];
      for (std::size_t k = i; k < n; ++k) acc += mul(row[k], s[k]);
      rhs[i] = acc;
    }
    // (I − β Ta) y_j = rhs, back substitution, β = Tb[j,j].
    const cplx beta = tb[j * m + j];
    cplx* yj = y + j * n;
    for (std::size_t ii = n; ii-- > 0;) {
      const cplx* row = ta + ii * n;
      cplx acc = 0;
      for (std::size_t k = ii + 1; k < n; ++k) acc += mul(row[k], yj[k]);
      yj[ii] = (rhs[ii] + beta * acc) / (cplx(1) - beta * row[ii]);
    }
  }
  // X = Qa Y Qbᴴ
  return xt::linalg::dot(xt::linalg::dot(a.q, xt::transpose(yt)), adjoint(b.q));
}

RMat solve_stein(const Schur& a, const Schur& b, const RMat& c) {
  return real_part(solve_stein(a, b, complexify(c)), "the solution of a real Stein equation");
}

RMat matmul(const RMat& a, const RMat& b) { return xt::linalg::dot(a, b); }

double stein_residual(const RMat& a, const RMat& b, const RMat& c, const RMat& x) {
  const RMat r = x - matmul(matmul(a, x), b) - c;
  return xt::amax(xt::abs(r))();
}

RMat inverse_spd(const RMat& a) {
  // LU inverse of the symmetrised matrix, symmetrised again to remove round-off asymmetry.
  const RMat sym = 0.5 * (a + xt::transpose(a));
  const RMat inv = xt::linalg::inv(sym);
  return 0.5 * (inv + xt::transpose(inv));
}

}  // namespace matmem::capacity::detail
