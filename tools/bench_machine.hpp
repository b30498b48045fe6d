// `matmem bench machine`: what one core of this machine can do, the bounds the step's speed is set against.
//
//   * caches: each level's size per core, from /sys/devices/system/cpu/cpu0/cache (the size a core's own
//     L1 and L2 hold; the L3 is shared), under $MATMEM_SYSFS_ROOT in place of /sys where it is set;
//   * peaks: a loop of independent multiply-adds on the widest vectors the build targets (the arithmetic
//     roofline, float32) and a 1024³ SGEMM through the library's BLAS (what a large product reaches);
//   * bandwidth at working sets from 16 KiB to 256 MiB: read (a sum), write (a fill) and copy (read one
//     buffer, write another, as a memory op reads M_{t−1} and writes M_t), counting bytes read plus written,
//     the best of three passes of about 256 MiB each.
// The step's memory ops stream their memory state once or twice per pass, so where the state fits (L2, L3 or
// only DRAM) sets how fast they can run: tools/results/training-speed.md "Bounds".
#pragma once
#include <cstdint>
#include <cstdio>

namespace matmem::tools {

double sgemm_peak_gflops();  // one core, a 1024³ float32 product
double fma_peak_gflops();    // one core, independent float32 multiply-adds on the widest vectors
// The best of read, write and copy (GB/s of bytes read + written) over working sets from 128 KiB to the core's
// L2: the most a memory op can stream when its state stays in the L2, as the micro-batches keep it.
double l2_stream_gbps();
// The best of read, write and copy over a working set of `bytes` (at least 16 KiB): the most a step can move
// values that take that much memory, at the level they fit in (the bench's limit for a GEMM op's operands).
double stream_gbps_at(std::int64_t bytes);
void bench_machine(std::FILE* csv);

}  // namespace matmem::tools
