// Files written whole: checkpoints (runtime/safetensors.cpp), a run's config.json and the first lines of its
// metrics.csv and validation.csv, or the rows a resume keeps (tools/train_command.cpp), a sweep's results
// (tools/sweep.cpp).
// write_file_durably writes PATH.tmp, fsyncs it, renames it over PATH and fsyncs the directory, so that a
// process killed midway, a crash or a power cut leaves PATH with its old bytes or all of the new ones. On any
// failure the temporary file is removed, PATH is untouched, and the Error names `what` ("checkpoint",
// "file"), PATH and the reason.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace matmem {

void write_file_durably(const std::string& path, std::initializer_list<std::span<const std::byte>> parts,
                        std::string_view what = "file");
void write_file_durably(const std::string& path, std::string_view text, std::string_view what = "file");

}  // namespace matmem
