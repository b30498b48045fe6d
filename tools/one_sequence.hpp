// The one generated sequence `matmem inspect` and `matmem gradients` run a trained model on: of the size asked
// (--length for the copy task, --items for a task sized otherwise), else the middle of the training range.
#pragma once
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "matmem/models/tasks/tasks.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/random.hpp"
#include "matmem/tools/options.hpp"

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

// The options that choose it: --length, --items (one or the other) and --seed.
inline void add_sequence_options(CLI::App* cmd, std::int64_t& length, std::int64_t& items, std::uint64_t& seed) {
  auto* by_length = cmd->add_option("--length", length, "Copy length (default: the middle of the training range)")
                        ->check(whole_number(1, 200));
  cmd->add_option("--items", items,
                  "The size of a task not sized by length: recall's items, keep_discard's sub-sequences, priority_sort's "
                  "inputs (default: the middle of the training range)")
      ->check(whole_number(2, 100))
      ->excludes(by_length);
  cmd->add_option("--seed", seed, "Seed of the sequence")->capture_default_str()->check(whole_number(0, kMaxSeed));
}

}  // namespace matmem::tools
