#include "matmem/runtime/float_env.hpp"

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace matmem {
namespace {
#if defined(__SSE2__)
constexpr unsigned kFlushBits = 0x8040;  // MXCSR bit 15, flush to zero; bit 6, denormals are zero
#endif
}  // namespace

FlushDenormals::FlushDenormals(bool on) {
#if defined(__SSE2__)
  if (!on) return;
  saved_ = _mm_getcsr();
  _mm_setcsr(saved_ | kFlushBits);
  set_ = true;
#else
  (void)on;
#endif
}

FlushDenormals::~FlushDenormals() {
#if defined(__SSE2__)
  if (set_) _mm_setcsr(saved_);
#endif
}

bool flushes_denormals() {
#if defined(__SSE2__)
  return (_mm_getcsr() & kFlushBits) == kFlushBits;
#else
  return false;
#endif
}

}  // namespace matmem
