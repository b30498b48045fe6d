// The pictures the `matmem` commands draw: learning curves (`matmem plot`, the paper's Figures 5 and 7),
// cost by sequence length or item count (`matmem eval --plot`, Figure 9), Fisher memory curves and
// capacities (`matmem capacity --plot`, Figures 2–4) and the inspect sheet (`matmem inspect`, Figures 6 and
// 8). Each writes one PNG or SVG file (tools/plot/figure.hpp) and returns where its panels' plot areas are.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "matmem/tools/plot/figure.hpp"
#include "matmem/tools/plot/runs.hpp"

namespace matmem::tools::plot {

struct CurveOptions {
  enum class Metric { both, loss, bits } metric = Metric::both;
  Spread spread = Spread::minmax;
  bool log_y = false;
  int smooth = 1;  // moving-average window in logged points
  int width = 0, height = 0;  // 0: 1400x560 for two panels, 800x560 for one
  bool x_sequences = false;   // x: sequences seen (step × the run's batch, Graves et al.'s axis), not steps
};
// One panel per metric: per group of runs (group_runs) the median over its runs against steps, with a band
// when the group has more than one run.
std::vector<PlotArea> learning_curves(const std::filesystem::path& out, const std::vector<Run>& runs,
                                      const CurveOptions& options);

// Cost per sequence against the copy length or recall item count, one line per evaluated run.
struct EvalSeries {
  std::string label;
  std::vector<double> size, bits, lo, hi;
};
PlotArea eval_chart(const std::filesystem::path& out, const std::string& size_name, const std::vector<EvalSeries>& runs);

// `matmem capacity`'s table as curves: `header`/`columns` as the command prints them. Curves (first column
// i or k): J columns in the left panel, running sums in the right, an eq.-based curve dashed next to its
// exact counterpart. Sweeps (first column N): the mean relative J_tot by N with its min–max band.
std::vector<PlotArea> capacity_chart(const std::filesystem::path& out, const std::string& title,
                                     const std::vector<std::string>& header,
                                     const std::vector<std::vector<double>>& columns);

// One run of a model on one sequence, for the inspect sheet. Matrices are row-major, one sample.
struct Matrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> values;
};
struct InspectData {
  std::string title;
  std::vector<Matrix> inputs;                // per time step
  std::vector<std::int64_t> target_steps;    // the time step of each target
  std::vector<Matrix> targets, outputs;      // per target (outputs as probabilities)
  struct Weighting {
    std::string name;                         // e.g. "write1/weighting"
    std::vector<std::vector<double>> w;       // [time][slot]
  };
  std::vector<Weighting> weightings;          // read heads, then write heads (a DNC's: its write head first)
  std::vector<std::vector<Matrix>> memory;    // [time][slot], after the step's writes; empty: no memory
  std::int64_t first_slot = -1, last_slot = -1;  // the slots drawn; −1: those the weightings touch
  // A DNC's states per slot, drawn as slots × time heatmaps before the weightings, each titled by its name
  // (e.g. "usage", "allocation weighting"); [time][slot] as a weighting's.
  std::vector<Weighting> slot_states;
  // A DNC's temporal link matrix L_t per time step (N×N, L[i,j]: how far slot i was written right after slot
  // j): a row of its own, L at the end of the input (the step before the first target) and at the last step.
  std::vector<Matrix> links;
  // false: the slots have no circular order (a DNC's heads move by allocation and links, not by shifts), so
  // the window of slots drawn is a plain range, chosen from the slot states too.
  bool circular = true;
};
// Writes the sheet; returns the plot areas of its heatmaps below the frames: the slot states', then the
// weightings', in InspectData's order, then the link matrices'.
std::vector<PlotArea> inspect_sheet(const std::filesystem::path& out, const InspectData& data);

}  // namespace matmem::tools::plot
