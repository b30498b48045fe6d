/// @file
/// The memory a training run will hold at its longest sequence, measured before it trains (Trainer checks it
/// against the machine's available memory, config key memory.check, and chooses the micro-batch from it).
///
/// Two short probe passes on a tape of their own, at batch b₀ = min(B, micro_batch or 64) and the task's two
/// probe sizes (Task::memory_probes): a pass's arena bytes grow linearly with the sequence's time steps and the
/// batch, so the probes give bytes per time step and sequence, extrapolated to the longest sequence
/// (Task::longest_steps() where the task gives it, else the probes' slope to its largest size) and the whole
/// batch, plus the data and what the process holds already. The micro-batch is halved while micro-batch
/// sequences' largest recorded value (an NTM's memory) exceeds micro_batch.state_kib.
#pragma once
#include <cstdint>
#include <string>

#include "matmem/models/core/model.hpp"
#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

class Config;

/// What a run will hold in memory at its longest sequence, estimated before training (see
/// Trainer::memory_estimate). Bytes as doubles: an absurd configuration must not overflow its own estimate.
struct MemoryEstimate {
  double bytes = 0;                ///< the whole process: what it holds now, the tapes and the batch's data
  double tape_bytes = 0;           ///< of which the tapes of a pass over the longest sequence
  double tape_bytes_per_frame = 0; ///< one sequence's tape per time step
  std::int64_t longest_frames = 0; ///< time steps of the longest sequence the task draws
  std::int64_t batch = 0;          ///< B
  std::int64_t micro_batch = 0;    ///< the sequences a pass runs (0: the whole batch), after micro_batch.state_kib
  double state_bytes = 0;          ///< one sequence's largest recorded value (an NTM's memory state)
  double available = 0;            ///< the machine's available memory (MemAvailable, or a cgroup's limit)
  std::string str() const;         ///< "about X GiB for …; Y GiB available"
};

/// The estimate for `model` (built, or built by the probes) trained on `task` with `config` (batch, micro_batch,
/// micro_batch.state_kib, threads); leaves the model's gradients zero.
MemoryEstimate estimate_memory(const Config& config, Model& model, const Task& task);

}  // namespace matmem
