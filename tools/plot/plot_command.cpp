// `matmem plot RUN_DIR… --out FILE`: learning curves of one or many runs (the paper's Figures 5 and 7).
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "matmem/tools/options.hpp"
#include "matmem/tools/plot/charts.hpp"
#include "matmem/tools/plot/commands.hpp"

namespace matmem::tools {
namespace {
struct Options {
  std::vector<std::string> runs;
  std::string out, metric = "both", band = "minmax", x = "step";
  bool log = false;
  int smooth = 1, width = 0, height = 0;
};

void run(const Options& o) {
  plot::format_of(o.out);  // refuse a wrong extension before reading anything
  std::vector<plot::Run> runs;
  for (const std::string& dir : o.runs) runs.push_back(plot::read_run(dir));
  plot::CurveOptions c;
  c.metric = o.metric == "loss" ? plot::CurveOptions::Metric::loss
             : o.metric == "bits" ? plot::CurveOptions::Metric::bits
                                  : plot::CurveOptions::Metric::both;
  c.spread = o.band == "iqr" ? plot::Spread::iqr : plot::Spread::minmax;
  c.log_y = o.log;
  c.x_sequences = o.x == "sequences";
  c.smooth = o.smooth;
  c.width = o.width;
  c.height = o.height;
  plot::learning_curves(o.out, runs, c);
  const std::vector<plot::RunGroup> groups = plot::group_runs(runs);
  for (const plot::RunGroup& g : groups) fmt::print("{}: {} run{}\n", g.label, g.runs.size(), g.runs.size() == 1 ? "" : "s");
  fmt::print("wrote {}\n", o.out);
}
}  // namespace

void add_plot_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "plot", "Learning curves (loss, bits per sequence) of training runs as a PNG or SVG picture");
  cmd->add_option("runs", o->runs, "Run directories (each with metrics.csv and config.json)")->required();
  cmd->add_option("--out", o->out, "Picture to write: FILE.png or FILE.svg")->required();
  cmd->add_option("--metric", o->metric, "both (two panels), loss or bits")
      ->check(CLI::IsMember({"both", "loss", "bits"}))
      ->capture_default_str();
  cmd->add_option("--band", o->band, "Band around the median of runs that differ only by seed: minmax or iqr")
      ->check(CLI::IsMember({"minmax", "iqr"}))
      ->capture_default_str();
  cmd->add_option("--x", o->x, "The x axis: step, or sequences seen (steps × batch, as Graves et al. 2014 plot)")
      ->check(CLI::IsMember({"step", "sequences"}))
      ->capture_default_str();
  cmd->add_flag("--log", o->log, "Logarithmic y axis");
  cmd->add_option("--smooth", o->smooth, "Moving-average window, in logged points (1: none)")
      ->check(whole_number(1, 10000))
      ->capture_default_str();
  cmd->add_option("--width", o->width, "Width in pixels (default 1400 for two panels, 800 for one)")
      ->check(whole_number(200, 10000));
  cmd->add_option("--height", o->height, "Height in pixels (default 560)")->check(whole_number(200, 10000));
  cmd->callback([o] { run(*o); });
}

std::string plot_hint(const std::string& run_dir) {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string program = "matmem";
  if (!ec) {
    const std::filesystem::path rel = std::filesystem::relative(self, ec);
    if (!ec && !rel.empty() && rel.string().rfind("..", 0) != 0)
      program = rel.has_parent_path() ? rel.string() : "./" + rel.string();
    else
      program = self.string();
  }
  const std::filesystem::path dir(run_dir), out = dir / "learning_curve.png";
  return fmt::format("plot it: {} plot {} --out {}", program, run_dir, out.string());
}

}  // namespace matmem::tools
