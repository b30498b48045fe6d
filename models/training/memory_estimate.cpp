#include "matmem/models/training/memory_estimate.hpp"

#include <algorithm>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/models/registry.hpp"
#include "matmem/runtime/sysfs.hpp"

namespace matmem {

namespace {
constexpr double kGiB = double(1 << 30);

double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  double size = 0, resident = 0;
  statm >> size >> resident;
  return resident * double(::sysconf(_SC_PAGESIZE));
}
}  // namespace

std::string MemoryEstimate::str() const {
  const std::string micro = micro_batch > 0 && micro_batch < batch
                                ? fmt::format(", in micro-batches of {} ({:.0f} KiB of state)", micro_batch,
                                              double(micro_batch) * state_bytes / 1024)
                                : "";
  return fmt::format("about {:.2f} GiB for the longest sequence ({} time steps × batch {}{}, {:.1f} KiB of tape per "
                     "time step and sequence); {:.1f} GiB available",
                     bytes / kGiB, longest_frames, batch, micro, tape_bytes_per_frame / 1024, available / kGiB);
}

MemoryEstimate estimate_memory(const Config& config, Model& model, const Task& task) {
  // Probes at the batch a pass runs (a micro-batch), or at most 64: a pass's bytes per sequence depend on its
  // batch (the memory's recomputation segment is chosen from the pass's memory size).
  const std::int64_t B = config.integer("batch"), micro = config.integer("micro_batch"),
                     b0 = std::min<std::int64_t>(B, micro > 0 ? micro : 64);
  Config probe_config = config;
  probe_config.set_json("batch", b0, "memory estimate");
  const std::unique_ptr<Task> probe_task = make_task(probe_config);
  const Task::MemoryProbes sizes = task.memory_probes();
  Tape tape(model.dtype());
  // Both passes save what backward needs, as a run's first pass does: recomputing only ever holds less.
  tape.set_recompute_above(SIZE_MAX);
  Unroller unroller(model, tape);
  Rng rng(0);
  Sequence seq;
  double bytes[2], frames[2];
  // Bytes per sequence of the largest value an op records for each sequence (an NTM's memory); a value the
  // batch shares (of batch size 1: a stacked V or U, Step::projections) does not grow with a micro-batch.
  double state = 0;
  for (int k = 0; k < 2; ++k) {
    probe_task->sample_size_into(rng, k == 0 ? sizes.first : sizes.second, seq, model.dtype());
    model.params().zero_grad();
    tape.backward(unroller.run(seq).loss);
    for (std::uint32_t id = 0; id < tape.size(); ++id)
      if (tape.node(id).op && tape.node(id).shape.batch == b0)
        state = std::max(state, double(size_of(tape.dtype()) * std::size_t(tape.node(id).shape.numel())) / double(b0));
    tape.clear();
    bytes[k] = double(tape.peak_pass_bytes()) / double(b0);
    frames[k] = double(seq.inputs.size());
  }
  model.params().zero_grad();
  MemoryEstimate m;
  m.batch = B;
  m.tape_bytes_per_frame =
      frames[1] > frames[0] ? std::max(0.0, (bytes[1] - bytes[0]) / (frames[1] - frames[0])) : bytes[0] / frames[0];
  // A task whose sequences of one size differ in length says its longest; else it grows linearly with size.
  const double longest =
      task.longest_steps() > 0
          ? double(task.longest_steps())
          : frames[0] + double(sizes.largest - sizes.first) * (frames[1] - frames[0]) / double(std::max<std::int64_t>(1, sizes.second - sizes.first));
  m.longest_frames = std::int64_t(longest);
  const double per_sequence = bytes[0] + (longest - frames[0]) * m.tape_bytes_per_frame;
  const double data = longest * 4.0 *
                      double(task.input_rows() * task.input_cols() + task.output_rows() * task.output_cols());
  const double copies = config.integer("threads") > 1 ? 2 : 1;  // the threads' slices of the batch
  // Halved while a micro-batch's largest state exceeds micro_batch.state_kib.
  const double limit = 1024.0 * double(config.integer("micro_batch.state_kib"));
  m.micro_batch = micro;
  while (limit > 0 && m.micro_batch > 1 && double(m.micro_batch) * state > limit) m.micro_batch /= 2;
  m.state_bytes = state;
  // The sequences whose tapes a pass holds at once: the batch, or each thread's micro-batch.
  const double held =
      micro > 0 ? double(std::min(B, std::max<std::int64_t>(1, config.integer("threads")) * m.micro_batch))
                : double(B);
  m.tape_bytes = held * per_sequence;
  m.bytes = resident_bytes() + m.tape_bytes + double(B) * copies * data;
  m.available = available_memory();
  return m;
}

}  // namespace matmem
