// The one generated sequence `matmem inspect` and `matmem gradients` run a trained model on: of the size asked
// (--length for the copy task, --items for a task sized otherwise), else the middle of the training range.
#pragma once
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "matmem/models/tasks/tasks.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/random.hpp"

namespace matmem::tools {

struct OneSequence {
  Sequence seq;
  std::int64_t size = 0;  // its length, items, … (the task's size_name())
};

inline OneSequence one_sequence(const Task& task, std::int64_t length, std::int64_t items, std::uint64_t seed,
                                DType dtype, const char* command) {
  const bool copy = std::string(task.size_name()) == "length";
  if (copy && items)
    throw Error(fmt::format("{}: --items is for the recall task; this run learned copy (use --length)", command));
  if (!copy && length)
    throw Error(fmt::format("{}: --length is for the copy task; this run learned {} (use --items)", command,
                            task.name()));
  OneSequence out;
  out.size = copy ? length : items;
  if (!out.size) {  // the middle of the training range
    const auto [lo, hi] = task.size_range();
    out.size = hi > 0 ? (lo + hi + 1) / 2 : task.eval_sizes().front();
  }
  Rng rng(seed);
  task.sample_size_into(rng, out.size, out.seq, dtype);
  return out;
}

}  // namespace matmem::tools
