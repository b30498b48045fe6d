/// @file
/// Shape of a matmem tensor and how its elements are laid out.
///
/// Logical shapes (spec/models.md):  a batch of matrices [B,r,c]; a memory [B,N,r,c]; a weighting over
/// slots [B,N] (= [B,1,N]); a per-sample scalar [B,1] (= [B,1,1]); a parameter [r,c] (= [1,r,c], broadcast
/// over the batch).
///
/// Physical layout. A batch of matrices (N = 1), "batch-interleaved rows": element (b, i, j) is stored at
///
///     (i * B + b) * c + j,
///
/// so a batch [B,r,c] is the single r x (B*c) matrix [P_1 | P_2 | ... | P_B] and the batched bilinear map
/// U^T P_b V is two GEMMs for the whole batch (U^T on that matrix, then V on its (r*B) x c reshape) instead
/// of 2B tiny ones. For r = 1 (weightings, scalars) and for B = 1 (parameters) this is plain row-major.
/// A memory (N > 1), "batch innermost": element (b, n, i, j) is stored at
///
///     ((n * r + i) * c + j) * B + b,
///
/// so slot n is the (r*c) x B matrix of its elements over the batch, and every per-(item, slot) quantity of
/// the memory ops (a cosine similarity, a read weight's gradient) is a sum over that matrix's rows: SIMD
/// lanes run over the batch and nothing is reduced across lanes. For B = 1 this too is plain row-major,
/// so parameters [1,N,r,c] are stored the same in both layouts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace matmem {

/// The shape [B,N,r,c] of a tensor: B samples, each N slots of r x c matrices (layout: see the file).
struct Shape {
  std::int64_t batch = 1;  ///< B
  std::int64_t slots = 1;  ///< N (1 unless a memory)
  std::int64_t rows = 1;   ///< r
  std::int64_t cols = 1;   ///< c

  /// B N r c, the number of elements.
  constexpr std::int64_t numel() const { return batch * slots * rows * cols; }
  constexpr std::int64_t matrix_size() const { return rows * cols; }  ///< one r x c matrix
  /// Offset of logical element (b, n, i, j).
  constexpr std::int64_t offset(std::int64_t b, std::int64_t n, std::int64_t i, std::int64_t j) const {
    return slots > 1 ? ((n * rows + i) * cols + j) * batch + b : (i * batch + b) * cols + j;
  }
  /// Equal when all four sizes are.
  constexpr bool operator==(const Shape&) const = default;

  /// "[16,15,15]" for a batch of matrices, "[16,120,6,6]" for a memory.
  std::string str() const;
};

/// A batch of b matrices r x c, [b,r,c].
constexpr Shape matrices(std::int64_t b, std::int64_t r, std::int64_t c) { return {b, 1, r, c}; }
/// A memory of b samples, each n slots of r x c matrices, [b,n,r,c].
constexpr Shape memory(std::int64_t b, std::int64_t n, std::int64_t r, std::int64_t c) { return {b, n, r, c}; }
/// A weighting over n slots per sample, [b,n] (stored as [b,1,n]).
constexpr Shape weighting(std::int64_t b, std::int64_t n) { return {b, 1, 1, n}; }
/// One scalar per sample, [b,1] (stored as [b,1,1]).
constexpr Shape scalars(std::int64_t b) { return {b, 1, 1, 1}; }
/// A parameter r x c, [r,c] (stored as [1,r,c], broadcast over the batch).
constexpr Shape parameter(std::int64_t r, std::int64_t c) { return {1, 1, r, c}; }

}  // namespace matmem
