// Files the tools write whole (a run's config.json, a sweep's results): into a temporary file beside the
// target, flushed, then renamed over it, so a reader, or a process killed midway, finds the old file or the
// new one, never part of one. (Checkpoints also fsync: models/training/trainer.hpp.)
#pragma once
#include <filesystem>
#include <string>

namespace matmem::tools {

// Throws Error naming the file when it cannot be written.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace matmem::tools
