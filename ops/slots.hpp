// Internal: helpers for the memory ops (memory_read, memory_write, cosine_similarity).
//
// A memory [B,N,r,c] (N ≥ 2) stores its batch innermost (runtime/shape.hpp): element e = i·c + j of slot n
// for item b is at (n·r·c + e)·B + b, so each slot is an (r·c) x B matrix. The memory ops bring their small
// operands into the same form once per call: a key, erase or add vector [B,r,c] (stored (i·B + b)·c + j) to
// xt[e·B + b], a weighting [B,N] (stored b·N + n) to wt[n·B + b]; both are the transposition of a B x m
// row-major block, done by to_batch_inner. Then every loop over a slot runs along e with SIMD lanes over
// the batch (simd_loop over B), and a per-(item, slot) total is a vertical sum: no horizontal reductions.
// At batches 1, 2, 4 and 8 (B < W dividing the SIMD width W) the memory ops take periodic lanes instead
// (Periodic below): full-width vectors along a slot's E·B contiguous values, each per-slot sum folded once.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "matmem/ops/check.hpp"

namespace matmem::ops {

// transpose: dst[j·ldd + i] = src[i·lds + j] (assign) or += (accumulate), for i < rows, j < cols. With
// AVX-512, float32 goes through 16 x 16 tiles in registers, or, with 2 or 4 rows or columns (the memory ops'
// periodic batches), through full vectors; float64 (gradient checks), small ones and builds without AVX-512
// one element at a time.
#if XSIMD_WITH_AVX512F
// r[i] holds row i of a 16 x 16 tile; afterwards r[j] holds column j. Four rounds of two-input shuffles:
// pairs of elements, then of pairs, then of 128-bit quarters twice.
inline void transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      t[8 * h + i] = _mm512_shuffle_f32x4(r[8 * h + i], r[8 * h + 4 + i], 0x88);
      t[8 * h + 4 + i] = _mm512_shuffle_f32x4(r[8 * h + i], r[8 * h + 4 + i], 0xDD);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xDD);
  }
}

// A transposition with one side of R ∈ {2, 4} (the memory ops' periodic batches) would fill a 16 x 16 tile an
// eighth or a quarter. These two move it through full vectors instead, each output vector the masked
// permutes of the R vectors it takes lanes from (lanes l of a mask k written by _mm512_mask_permutexvar_ps):
// R permutes a vector where a tile takes 64 shuffles for 16 R values. (R = 8, half a tile, gained nothing.)
// Lanes l ↦ l mod R = r, as a mask.
inline __mmask16 lanes_modulo(int R, int r) {
  unsigned m = 0;
  for (int l = r; l < 16; l += R) m |= 1u << l;
  return __mmask16(m);
}
// Lanes [0, n) of a W-lane mask (none for n ≤ 0, all for n ≥ W).
template <class Mask, std::int64_t W>
Mask lanes_below(std::int64_t n) {
  return n >= W ? Mask(~Mask(0)) : n <= 0 ? Mask(0) : Mask((1u << n) - 1);
}
inline __mmask16 first_lanes(std::int64_t n) { return lanes_below<__mmask16, 16>(n); }

// R rows of src (row i at src + i·lds) interleaved into contiguous dst: dst[j·R + i] = src[i·lds + j], j < cols.
// Output vector k of a 16-column block holds lanes l from row l mod R, column 16k/R + l div R.
template <int R>
void interleave_rows(const float* src, std::int64_t lds, std::int64_t cols, float* dst, bool accumulate) {
  static_assert(R == 2 || R == 4);
  constexpr int shift = R == 2 ? 1 : 2;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i column = _mm512_srli_epi32(lane, unsigned(shift));
  __mmask16 row_lanes[R];
  for (int r = 0; r < R; ++r) row_lanes[r] = lanes_modulo(R, r);
  for (std::int64_t j0 = 0; j0 < cols; j0 += 16) {
    const std::int64_t nc = std::min<std::int64_t>(16, cols - j0);
    __m512 a[R];
    for (int r = 0; r < R; ++r) a[r] = _mm512_maskz_loadu_ps(first_lanes(nc), src + r * lds + j0);
    const std::int64_t n = nc * R;  // values this block writes
    for (std::int64_t k = 0; 16 * k < n; ++k) {
      const __m512i idx = _mm512_add_epi32(column, _mm512_set1_epi32(int(k) * (16 >> shift)));
      __m512 v = _mm512_setzero_ps();
      for (int r = 0; r < R; ++r) v = _mm512_mask_permutexvar_ps(v, row_lanes[r], idx, a[r]);
      float* out = dst + j0 * R + 16 * k;
      const __mmask16 m = first_lanes(n - 16 * k);
      if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, out), v);
      _mm512_mask_storeu_ps(out, m, v);
    }
  }
}

// The inverse: contiguous src of R values per position deinterleaved into R rows (row j at dst + j·ldd):
// dst[j·ldd + i] = src[i·R + j], i < rows. Lane m of row j is lane (m·R + j) mod 16 of input vector
// (m·R + j) div 16, which is k for the 16/R lanes m from 16k/R on.
template <int R>
void deinterleave_rows(const float* src, std::int64_t rows, float* dst, std::int64_t ldd, bool accumulate) {
  static_assert(R == 2 || R == 4);
  constexpr int shift = R == 2 ? 1 : 2, per = 16 >> shift;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i scaled = _mm512_slli_epi32(lane, unsigned(shift));
  for (std::int64_t i0 = 0; i0 < rows; i0 += 16) {
    const std::int64_t ni = std::min<std::int64_t>(16, rows - i0), n = ni * R;
    __m512 s[R];
    for (int k = 0; k < R; ++k) s[k] = _mm512_maskz_loadu_ps(first_lanes(n - 16 * k), src + i0 * R + 16 * k);
    for (int j = 0; j < R; ++j) {
      const __m512i idx = _mm512_and_si512(_mm512_add_epi32(scaled, _mm512_set1_epi32(j)), _mm512_set1_epi32(15));
      __m512 v = _mm512_setzero_ps();
      for (int k = 0; k < R; ++k)
        v = _mm512_mask_permutexvar_ps(v, __mmask16(((1u << per) - 1) << (k * per)), idx, s[k]);
      float* out = dst + j * ldd + i0;
      const __mmask16 m = first_lanes(ni);
      if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, out), v);
      _mm512_mask_storeu_ps(out, m, v);
    }
  }
}

// Through 16 x 16 tiles in registers, masked loads and stores at the edges.
inline void transpose_tiles(const float* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, float* dst,
                            std::int64_t ldd, bool accumulate) {
  for (std::int64_t i0 = 0; i0 < rows; i0 += 16) {
    const std::int64_t nr = std::min<std::int64_t>(16, rows - i0);
    const __mmask16 row_mask = first_lanes(nr);
    for (std::int64_t j0 = 0; j0 < cols; j0 += 16) {
      const std::int64_t nc = std::min<std::int64_t>(16, cols - j0);
      __m512 r[16];
      for (std::int64_t i = 0; i < 16; ++i)
        r[i] = i < nr ? _mm512_maskz_loadu_ps(first_lanes(nc), src + (i0 + i) * lds + j0) : _mm512_setzero_ps();
      transpose16x16(r);
      for (std::int64_t j = 0; j < nc; ++j) {
        float* out = dst + (j0 + j) * ldd + i0;
        const __m512 v = accumulate ? _mm512_add_ps(_mm512_maskz_loadu_ps(row_mask, out), r[j]) : r[j];
        _mm512_mask_storeu_ps(out, row_mask, v);
      }
    }
  }
}
#endif

// Accumulating at most this many values, masked stores cost more than one value at a time: the masked load of
// the next output, within 64 bytes of a masked store just made, waits for that store to retire
// (`from_batch_inner` of a 6 x 6 erase gradient at batch 4: 200–212 ns through tiles, 63–87 one at a time).
inline constexpr std::int64_t kSmallTransposition = 64;

template <class T>
inline void transpose(const T* src, std::int64_t lds, std::int64_t rows, std::int64_t cols, T* dst, std::int64_t ldd,
                      bool accumulate) {
  if ((rows == 1 && ldd == 1) || (cols == 1 && lds == 1)) {  // a contiguous copy (B = 1 in to/from_batch_inner)
    const std::int64_t n = rows * cols;
    if (accumulate)
      for (std::int64_t k = 0; k < n; ++k) dst[k] += src[k];
    else
      std::copy_n(src, n, dst);
    return;
  }
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_same_v<T, float>) {
    if (ldd == rows && rows == 2) return interleave_rows<2>(src, lds, cols, dst, accumulate);
    if (ldd == rows && rows == 4) return interleave_rows<4>(src, lds, cols, dst, accumulate);
    if (!accumulate || rows * cols > kSmallTransposition) {
      if (lds == cols && cols == 2) return deinterleave_rows<2>(src, rows, dst, ldd, accumulate);
      if (lds == cols && cols == 4) return deinterleave_rows<4>(src, rows, dst, ldd, accumulate);
      return transpose_tiles(src, lds, rows, cols, dst, ldd, accumulate);
    }
  }
#endif
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      T& out = dst[j * ldd + i];
      out = accumulate ? out + src[i * lds + j] : src[i * lds + j];
    }
}

// xt[e·B + b] = x[(i·B + b)·c + j], e = i·c + j  (x: [B,r,c] in the matrix layout; r = 1 and c = N for a
// weighting [B,N]): for each row i, the B x c block of x transposed.
template <class T>
inline void to_batch_inner(const T* x, std::int64_t B, std::int64_t r, std::int64_t c, T* xt) {
  for (std::int64_t i = 0; i < r; ++i) transpose(x + i * B * c, c, B, c, xt + i * c * B, B, false);
}

// The inverse of to_batch_inner: x = xt (assign) or x += xt (accumulate).
template <class T>
inline void from_batch_inner(const T* xt, std::int64_t B, std::int64_t r, std::int64_t c, T* x, bool accumulate) {
  for (std::int64_t i = 0; i < r; ++i) transpose(xt + i * c * B, B, c, B, x + i * B * c, c, accumulate);
}

// simd_loop<T>(n, f) calls f(q, X{}) over [0, n): X = xsimd::batch<T> on full chunks, then narrower
// batches (256- and 128-bit, where the widest is wider), then, for 2 or 3 float lanes left, one 128-bit
// pass with the lanes past n loaded as 0 and never stored (X = Partial<T>: masked loads and stores,
// AVX-512VL), and for 1 lane (or without AVX-512VL) X = T, one lane at a time. One generic body (using load<X> / store<X>)
// serves all. (The memory ops' batches of 1, 2, 4 and 8 take periodic lanes instead, below, on AVX-512.)
// Every call of f is a pass over the memory's slots, so a masked pass in place of two or three scalar ones
// paid: the MatNTM copy step at batch 10 (8 lanes, then 2) ran 0.86 of its time with two scalar passes. A lone lane stays scalar: as
// one masked pass the batch-1 step took 1.5x as long (a load of a value a masked store just wrote waits
// for the store, and the kernels' read sums do that on every slot).
// Call load/store qualified (ops::store<X>): unqualified, store(p, batch) finds xsimd::store by
// argument-dependent lookup, an aligned store.
// simd_loop is always inlined and flattens f's body into itself. A kernel's body is a lambda capturing by
// reference; left out of line, every SIMD store (a may-alias store) made the compiler reload each
// captured pointer and size through the closure, two dependent loads per use. Flattening does not reach
// every body: GCC 12 kept memory_read_write's out of line, so those lambdas are declared
// `[&](std::int64_t q, auto x) __attribute__((always_inline)) {` (GCC and clang honour the attribute there,
// not `[[gnu::always_inline]]`, which would apply to the lambda's type). Where that was measured, see
// ops/memory_read_write.hpp; in cosine_similarity's forward the same made the op slower, so it is not
// applied everywhere. There the body is a function of its own whose pointers and sizes are parameters
// (cosine_similarity's group_sums and group_backward), which no store can change, in line or not.
template <class X>
constexpr bool is_partial = false;
#if defined(__AVX512VL__) && XSIMD_WITH_SSE2
#define MATMEM_PARTIAL_LANES 1
template <class T>
struct Partial : xsimd::batch<T, xsimd::sse2> {
  using Base = xsimd::batch<T, xsimd::sse2>;
  using Base::Base;
  Partial() = default;
  Partial(const Base& b) : Base(b) {}
};
// The live lanes of the Partial pass running on this thread (set by simd_loop).
inline thread_local unsigned partial_lanes = 0;
template <class T>
constexpr bool is_partial<Partial<T>> = true;
#endif

template <class T, class F>
[[gnu::always_inline, gnu::flatten]] inline void simd_loop(std::int64_t n, F&& f) {
  using V = xsimd::batch<T>;
  std::int64_t q = 0;
  for (; q + std::int64_t(V::size) <= n; q += V::size) f(q, V{});
#if XSIMD_WITH_AVX2
  if constexpr (V::size * sizeof(T) > 32) {
    using V2 = xsimd::batch<T, xsimd::avx2>;
    for (; q + std::int64_t(V2::size) <= n; q += V2::size) f(q, V2{});
  }
#endif
#if XSIMD_WITH_SSE2
  if constexpr (V::size * sizeof(T) > 16) {
    using V4 = xsimd::batch<T, xsimd::sse2>;
    for (; q + std::int64_t(V4::size) <= n; q += V4::size) f(q, V4{});
  }
#endif
#ifdef MATMEM_PARTIAL_LANES
  // float only: after 128-bit chunks of doubles at most one lane is left, which stays scalar.
  if constexpr (xsimd::batch<T, xsimd::sse2>::size > 2) {
    if (q + 1 < n) {
      partial_lanes = unsigned(n - q);
      f(q, Partial<T>{});
      return;
    }
  }
#endif
  for (; q < n; ++q) f(q, T{});
}
template <class X, class T>
inline X load(const T* p) {
  if constexpr (std::is_same_v<X, T>) return *p;
#ifdef MATMEM_PARTIAL_LANES
  else if constexpr (is_partial<X>)
    return X(_mm_maskz_loadu_ps(__mmask8((1u << partial_lanes) - 1), p));
#endif
  else return X::load_unaligned(p);
}
// store<X>(p, v): X, the pass's type, is named, not deduced: an expression of Partial<T> operands has the
// type of a full batch, and would be stored whole.
template <class X, class T, class V>
inline void store(T* p, const V& v) {
  if constexpr (std::is_same_v<X, T>) *p = v;
#ifdef MATMEM_PARTIAL_LANES
  else if constexpr (is_partial<X>)
    _mm_mask_storeu_ps(p, __mmask8((1u << partial_lanes) - 1), X(v));
#endif
  else X(v).store_unaligned(p);
}

// Periodic lanes, for a batch narrower than the SIMD width: B ∈ {1, 2, 4, 8} dividing W (W = 16 float32 or
// 8 float64 lanes, AVX-512). With lanes over the batch a pass over the memory would fill B of W lanes (and
// B = 1 ran scalar). But with the batch innermost a slot's E·B values are contiguous, element (e, b) at
// e·B + b, and so is every operand transposed to that form (a key, erase, add or read [E·B]). So a slot is
// walked as L = E·B consecutive values in W-wide chunks, the last one masked (L mod W lanes): chunk j's
// lane l holds element (j·W + l) div B of item (j·W + l) mod B = l mod B, since B divides W. A per-(item,
// slot) factor w[n·B + b] becomes the W-wide vector repeating w[n·B .. n·B + B) (periodic), and a per-
// (item, slot) sum along the slot ends in a W-wide accumulator whose lanes b, b + B, b + 2B, … are added
// at the end (fold, log2(W/B) rotate-and-add steps, always in the same order: a run is deterministic).
// Lanes past a masked tail are loaded as 0, so they add nothing to the sums, and never stored.
// `periodic_lanes` turns the path off, so a test can compare it with the lane-per-item path on the same
// inputs; nothing else changes it.
inline bool periodic_lanes = true;
#if XSIMD_WITH_AVX512F
#define MATMEM_PERIODIC_LANES 1
template <class T>
struct Periodic {
  using V = xsimd::batch<T>;
  static_assert(sizeof(V) == 64, "periodic lanes assume AVX-512 batches");
  static constexpr std::int64_t W = V::size;
  using Mask = std::conditional_t<sizeof(T) == 4, __mmask16, __mmask8>;
  static constexpr Mask kFull = Mask(~Mask(0));
  static Mask first(std::int64_t m) { return lanes_below<Mask, W>(m); }  // lanes [0, m)
  static V load(const T* p) { return V::load_unaligned(p); }
  static V load(const T* p, Mask k) {
    if constexpr (sizeof(T) == 4) return V(_mm512_maskz_loadu_ps(k, p));
    else return V(_mm512_maskz_loadu_pd(k, p));
  }
  static void store(T* p, const V& v) { v.store_unaligned(p); }
  static void store(T* p, const V& v, Mask k) {
    if constexpr (sizeof(T) == 4) _mm512_mask_storeu_ps(p, k, v);
    else _mm512_mask_storeu_pd(p, k, v);
  }
  // Lane l = lane idx[l] of v.
  static V permute(const V& v, __m512i idx) {
    if constexpr (sizeof(T) == 4) return V(_mm512_permutexvar_ps(idx, v));
    else return V(_mm512_permutexvar_pd(idx, v));
  }
  // Lane l = lane idx[l] of a (idx[l] < W) or of b (idx[l] − W).
  static V permute2(const V& a, const V& b, __m512i idx) {
    if constexpr (sizeof(T) == 4) return V(_mm512_permutex2var_ps(a, idx, b));
    else return V(_mm512_permutex2var_pd(a, idx, b));
  }
  static __m512i index(const std::int64_t* idx) {
    if constexpr (sizeof(T) == 4) {
      alignas(64) std::int32_t t[W];
      for (std::int64_t l = 0; l < W; ++l) t[l] = std::int32_t(idx[l]);
      return _mm512_load_si512(t);
    } else {
      return _mm512_loadu_si512(idx);
    }
  }
  // The index vectors l ↦ (l + s) mod W and l ↦ l mod B.
  static __m512i rotate_index(std::int64_t s) {
    if constexpr (sizeof(T) == 4) {
      const __m512i l = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      return _mm512_and_si512(_mm512_add_epi32(l, _mm512_set1_epi32(int(s))), _mm512_set1_epi32(int(W - 1)));
    } else {
      const __m512i l = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
      return _mm512_and_si512(_mm512_add_epi64(l, _mm512_set1_epi64(s)), _mm512_set1_epi64(W - 1));
    }
  }
  static __m512i modulo_index(std::int64_t B) {
    if constexpr (sizeof(T) == 4)
      return _mm512_and_si512(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              _mm512_set1_epi32(int(B - 1)));
    else return _mm512_and_si512(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7), _mm512_set1_epi64(B - 1));
  }
  // The constants of one batch width B, made once per call.
  struct Lanes {
    std::int64_t B;
    int steps;             // log2(W / B)
    __m512i period;        // l ↦ l mod B
    __m512i rotate[4];     // l ↦ (l + W/2^(s+1)) mod W, s < steps
    Mask items;            // lanes [0, B)
    explicit Lanes(std::int64_t batch) : B(batch), steps(0), period(modulo_index(batch)), items(first(batch)) {
      for (std::int64_t h = W / 2; h >= B; h /= 2) rotate[steps++] = rotate_index(h);
      if (packs4()) init_packing();
    }
    // The W-wide vector repeating p[0 .. B).
    V periodic(const T* p) const { return permute(load(p, items), period); }
    // Lanes [0, B) of the result hold Σ_k v[b + k·B].
    V fold(V v) const {
      for (int s = 0; s < steps; ++s) v += permute(v, rotate[s]);
      return v;
    }
    // p[0 .. B) = fold(v), or += with accumulate.
    void fold_store(T* p, const V& v, bool accumulate) const {
      const V f = fold(v);
      store(p, accumulate ? f + load(p, items) : f, items);
    }
    // p[u·B + b] = fold(a[u])[b] for four sums a[0..3] whose results lie side by side, folded together: two
    // rounds that each halve the width of every sum and pack two sums' halves into one vector (four
    // two-source permutes, then two), then the last log2(W/4 / B) steps within each quarter, and one permute
    // to bring lanes u·W/4 + b to u·B + b. For B ≤ W/4: 9 permutes and 5 adds at B = 1 in float32, where
    // four folds take 16 and 16.
    bool packs4() const { return 4 * B <= W; }
    void fold4_store(T* p, const std::array<V, 4>& a) const {
      const V c01 = permute2(a[0], a[1], half_lo) + permute2(a[0], a[1], half_hi);
      const V c23 = permute2(a[2], a[3], half_lo) + permute2(a[2], a[3], half_hi);
      V d = permute2(c01, c23, quarter_lo) + permute2(c01, c23, quarter_hi);
      for (int s = 0; s < quarter_steps; ++s) d += permute(d, quarter_rotate[s]);
      store(p, 4 * B == W ? d : permute(d, compact), first(4 * B));
    }
    __m512i half_lo, half_hi, quarter_lo, quarter_hi, quarter_rotate[2], compact;
    int quarter_steps = 0;
    void init_packing() {
      alignas(64) std::int64_t idx[6][W];
      const std::int64_t Q = W / 4;
      for (std::int64_t l = 0; l < W; ++l) {
        const std::int64_t half = l / (W / 2), o2 = l % (W / 2), q = l / Q, o4 = l % Q;
        idx[0][l] = half * W + o2;                                  // a[0] or a[1], lanes [0, W/2)
        idx[1][l] = half * W + W / 2 + o2;                          // their lanes [W/2, W)
        idx[2][l] = (q / 2) * W + (q % 2) * (W / 2) + o4;           // quarter q: sum q's first W/4
        idx[3][l] = (q / 2) * W + (q % 2) * (W / 2) + Q + o4;       // and its next W/4
        idx[4][l] = l < 4 * B ? (l / B) * Q + l % B : 0;            // compact
      }
      half_lo = index(idx[0]), half_hi = index(idx[1]), quarter_lo = index(idx[2]), quarter_hi = index(idx[3]);
      compact = index(idx[4]);
      for (std::int64_t h = Q / 2; h >= B; h /= 2) {
        for (std::int64_t l = 0; l < W; ++l) idx[5][l] = (l / Q) * Q + (l % Q + h) % Q;
        quarter_rotate[quarter_steps++] = index(idx[5]);
      }
    }
  };
};
#endif
// Whether a memory op of batch B takes the periodic path (for T on this build).
template <class T>
inline bool use_periodic_lanes(std::int64_t B) {
#ifdef MATMEM_PERIODIC_LANES
  constexpr std::int64_t W = xsimd::batch<T>::size;
  return periodic_lanes && B < W && W % B == 0;
#else
  (void)B;
  return false;
#endif
}

// Asks for the cache line at p in exclusive state (PREFETCHW) before a store to it. A memory op's output is
// mostly a buffer last written several time steps ago (a ring buffer of a recomputed chain, a checkpoint),
// out of L2, and each store that misses waits for its line to be read in; kPrefetchSlots slots ahead of the
// stores those reads overlap the work. (A prefetch never faults: p may lie past the buffer's end.)
// Measured in the ntm-copy step, memory_read_write's forward with its re-runs: 0.78–0.86 of their time at
// 3 slots ahead, 0.82 at 2, 0.89 at 4 and 6, the step 0.967 (16 alternating runs). Its backward writes
// grad_M into a recycled gradient buffer, already in cache, and ran 1.11 of its time with it; asking for its
// two read streams (the memory and grad_M') 3 slots ahead made it 1.06–1.26 as slow (batch 16, 4 alternating
// profiled runs), so neither is there.
constexpr std::int64_t kPrefetchSlots = 3;
inline void prefetch_for_write(const void* p) { __builtin_prefetch(p, 1, 3); }

// Independent accumulators for a sum along a slot's elements (element e into chain e mod kChains), so
// successive FMAs do not wait on each other's latency.
constexpr int kChains = 4;

// Calls f(e, u) for every element e in [0, E) with its chain u (e mod kChains, and 0 for the tail).
template <class F>
inline void for_each_chained(std::int64_t E, F&& f) {
  std::int64_t e = 0;
  for (; e + kChains <= E; e += kChains)
#pragma GCC unroll 8
    for (int u = 0; u < kChains; ++u) f(e + u, u);
  for (; e < E; ++e) f(e, 0);
}

// Calls f(n0, std::integral_constant<int, S>{}) over the slots [0, N) in groups: S = kSlotGroup while a
// whole group is left, then S = 1. A pass that adds every slot's term into one small sum (cosine_similarity:
// a key's gradient, in backward; each slot's dot products and norm, in forward) takes a group's terms in
// registers and stores once per group. (memory_read_write's backward walks element blocks instead, with
// the small gradients' block in registers; for cosine_similarity's backward, a copy of its loop ran no
// faster that way.)
constexpr int kSlotGroup = 4;
template <class F>
inline void for_each_slot_group(std::int64_t N, F&& f) {
  std::int64_t n = 0;
  for (; n + kSlotGroup <= N; n += kSlotGroup) f(n, std::integral_constant<int, kSlotGroup>{});
  for (; n < N; ++n) f(n, std::integral_constant<int, 1>{});
}

// num / den where den > 0, else 0 (a norm's subgradient at zero), for a SIMD chunk or a scalar.
template <class X>
inline X over_positive(const X& num, const X& den) {
  if constexpr (std::is_arithmetic_v<X>) return den > 0 ? num / den : X(0);
  else return xsimd::select(den > X(0), num / den, X(0));
}

// The memory ops store the batch innermost only for N ≥ 2 slots (a [B,1,r,c] is a batch of matrices).
inline void check_memory(std::string_view op, Var memory) {
  const Shape& m = memory.shape();
  if (m.slots < 2) shape_error(op, "a memory [B,N,r,c] needs N ≥ 2 slots", memory);
}

// Shape checks of a weighting w for memory, and of a write's operands (op names the caller in errors).
inline void check_weighting(std::string_view op, Var memory, Var w) {
  same_tape(op, memory, w);
  const Shape &m = memory.shape(), &ws = w.shape();
  if (!is_weighting(ws) || ws.batch != m.batch || ws.cols != m.slots)
    shape_error(op, "memory must be [B,N,r,c] and the weighting [B,N] with the same B and N", memory, w);
}
inline void check_write(std::string_view op, Var memory, Var w, Var erase, Var add) {
  check_memory(op, memory);
  check_weighting(op, memory, w);
  same_tape(op, memory, erase);
  same_tape(op, memory, add);
  const Shape& m = memory.shape();
  const Shape slot = matrices(m.batch, m.rows, m.cols);
  if (erase.shape() != slot) shape_error(op, "erase must be [B,r,c] like one slot of the memory", memory, erase);
  if (add.shape() != slot) shape_error(op, "add must be [B,r,c] like one slot of the memory", memory, add);
}

}  // namespace matmem::ops
