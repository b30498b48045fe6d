// `matmem capacity`: Fisher memory curves and memory capacity of linear matrix RNNs (paper 000 §2–5),
// of random connectivities or of a trained MatRNN layer's recurrent term. See models/capacity/README.md.
#pragma once

namespace CLI {
class App;
}

namespace matmem::tools {
void add_capacity_command(CLI::App& app);  // tools/capacity_command.cpp
}  // namespace matmem::tools
