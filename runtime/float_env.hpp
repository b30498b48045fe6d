/// @file
/// Subnormal floats flushed to zero while a FlushDenormals lives, on its thread.
///
/// A trained model's values and gradients reach the subnormal range (|x| < 1.2e-38 in float32, 2.2e-308 in
/// float64), and x86 cores take each operation on a subnormal operand or result through a microcode assist of
/// about a hundred cycles. On Graves' priority sort with the LSTM controller, one sequence an update, the step of
/// a model trained to 620,000 sequences took 7.0–8.7 ms where a fresh model's took 3.3; with subnormals flushed,
/// 3.5–3.8 (models/training/README.md). FlushDenormals sets the MXCSR's flush-to-zero (a subnormal result is 0)
/// and denormals-are-zero (a subnormal operand reads as 0) bits, as TensorFlow does for its CPU kernels, and
/// restores the register's previous value when it ends. Values at or above the smallest normal number compute as
/// before, bit for bit. Only SSE and AVX arithmetic sees the bits (all of matmem's and its libraries' kernels on
/// x86-64); on a core without them (not x86) FlushDenormals does nothing and flushes_denormals() says so.
#pragma once

namespace matmem {

/// While it lives, this thread's floating-point arithmetic flushes subnormals to zero (`on`), or leaves the
/// thread's mode as it is (`off`: a scope that is configured off). Not copyable; nests.
class FlushDenormals {
 public:
  explicit FlushDenormals(bool on = true);
  ~FlushDenormals();
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_ = 0;  // the MXCSR before, restored at the end
  bool set_ = false;    // whether this object changed it
};

/// Whether this thread's arithmetic flushes subnormals now (both bits set); false where the core has no such mode.
bool flushes_denormals();

}  // namespace matmem
