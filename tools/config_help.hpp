// `matmem train --help-config`: every config key with its default and meaning, grouped by prefix, then the
// presets; an index of the sections first, and every line wrapped to the terminal's width.
#pragma once
#include <string>

namespace matmem::tools {

/// The columns of standard output's terminal; else $COLUMNS; else 100 (output to a file or a pipe).
int output_width();

/// The text `--help-config` prints, its lines at most `width` columns where a word allows (≥ 60).
std::string config_help(int width);

}  // namespace matmem::tools
