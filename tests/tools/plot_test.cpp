// tools/plot: the pictures themselves (PNG header and pixels, SVG structure and words) and the learning-curve
// data behind them, drawn from small fixed inputs.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "matmem/runtime/error.hpp"
#include "matmem/tests/tools/command.hpp"
#include "matmem/tests/tools/plot_check.hpp"
#include "matmem/tools/plot/charts.hpp"
#include "matmem/tools/plot/figure.hpp"
#include "matmem/tools/plot/runs.hpp"

using namespace matmem;
using namespace matmem::testing;
using namespace matmem::tools::plot;
namespace fs = std::filesystem;

namespace {

// A run directory as `matmem train` leaves it, with the given curves.
fs::path write_run(const fs::path& dir, const std::string& model, int seed, const std::vector<double>& loss,
                   const std::vector<double>& bits, const std::string& lr = "0.0001") {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{\"model\": \"" << model << "\", \"task\": \"copy\", \"seed\": " << seed
                                      << ", \"lr\": " << lr << ", \"threads\": 1, \"steps\": " << 50 * loss.size()
                                      << "}\n";
  std::ofstream m(dir / "metrics.csv");
  m << "step,seconds,loss,bits_per_sequence,grad_norm,frames,skipped\n";
  for (std::size_t k = 0; k < loss.size(); ++k)
    m << 50 * (k + 1) << "," << 0.1 * double(k) << "," << loss[k] << "," << bits[k] << ",1.0,20.0,0\n";
  return dir;
}

// Pixel row of world value y in a plot area (linear axis).
double row_of(const PlotArea& a, double y) { return a.top + (a.y_max - y) / (a.y_max - a.y_min) * (a.bottom - a.top); }
double column_of(const PlotArea& a, double x) { return a.left + (x - a.x_min) / (a.x_max - a.x_min) * (a.right - a.left); }

// A <text> of PLplot's svg device: its characters, font size, and the place its anchor is drawn at (the
// transform's translation; PLplot's svg coordinates count y up from the bottom), upright or turned a quarter.
struct PlacedText {
  std::string text;
  double size = 0, x = 0, y = 0;
  bool upright = true;
};
std::vector<PlacedText> placed_texts(const std::string& svg) {
  const std::vector<std::string> texts = svg_texts(svg);
  std::vector<PlacedText> out;
  std::size_t k = 0;
  for (const std::string& t : texts) {
    k = svg.find("<text", k);
    const std::string tag = svg.substr(k, svg.find('>', k) - k);
    k += 5;
    PlacedText p;
    p.text = t;
    const std::size_t size = tag.find("font-size=\""), matrix = tag.find("transform=\"matrix(");
    if (size == std::string::npos || matrix == std::string::npos) continue;
    p.size = std::stod(tag.substr(size + 11));
    double m[6];
    std::istringstream in(tag.substr(matrix + 18));
    for (double& v : m) in >> v;
    p.upright = std::abs(m[0]) > 0.5;
    p.x = m[4], p.y = m[5];
    out.push_back(p);
  }
  return out;
}
bool is_number(const std::string& t) {
  return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.' || c == '-'; });
}
// The width of a string in DejaVu Sans (the svg device's sans-serif), in em: a digit 0.64, other text about 0.56.
double text_width(const PlacedText& t) { return (is_number(t.text) ? 0.64 : 0.56) * t.size * double(t.text.size()); }

}  // namespace

TEST_CASE("plot: the extension chooses PNG or SVG, any other is refused naming both", "[plot]") {
  CHECK(format_of("a.png") == Format::png);
  CHECK(format_of("dir/a.SVG") == Format::svg);
  CHECK_THROWS_WITH(format_of("curve.pdf"), Catch::Contains("curve.pdf") && Catch::Contains(".png or .svg") &&
                                                Catch::Contains(".pdf is neither"));
  CHECK_THROWS_WITH(format_of("curve", "--plot"), Catch::Contains("--plot curve") && Catch::Contains("it has none"));
  const fs::path dir = fresh_dir("plot_format");
  CHECK_THROWS_AS(Figure(dir / "a.jpg", 300, 200), Error);
  CHECK_FALSE(fs::exists(dir / "a.jpg"));
  CHECK_THROWS_WITH(Figure(dir / "missing" / "a.png", 300, 200), Catch::Contains("cannot write"));
}

TEST_CASE("plot: a line plot is a PNG of the asked size and an SVG with that viewBox", "[plot]") {
  const fs::path dir = fresh_dir("plot_size");
  LinePlot p;
  p.x_label = "x";
  p.y_label = "y";
  p.lines.push_back({"a line", {0, 1, 2}, {1, 3, 2}, {}, {}, 0, false, false});
  for (const char* name : {"a.png", "a.svg"}) {
    Figure f(dir / name, 640, 420);
    f.lines({0, 1, 0, 1}, p);
    f.finish();
  }
  const PngHeader h = png_header(dir / "a.png");
  CHECK(h.signature);
  CHECK(h.width == 640);
  CHECK(h.height == 420);
  const std::string svg = file_bytes(dir / "a.svg");
  std::string root;
  CHECK(svg_well_formed(svg, &root));
  CHECK(root == "svg");
  CHECK(svg_root_attribute(svg, "viewBox") == "0 0 640 420");
  CHECK(svg_root_attribute(svg, "width") == "640pt");
}

// PLplot's cairo SVG device draws glyphs as paths; its own svg device, which matmem uses for .svg, keeps each
// string as a <text> element, so the words can be found in the file.
TEST_CASE("plot: learning curves' SVG holds the axis labels, titles and one legend entry per group", "[plot]") {
  const fs::path dir = fresh_dir("plot_svg_words");
  std::vector<Run> runs;
  for (int seed = 1; seed <= 3; ++seed)
    runs.push_back(read_run(write_run(dir / fmt::format("ntm{}", seed), "matntm", seed, {0.7, 0.5, 0.1}, {100, 50, 2})));
  runs.push_back(read_run(write_run(dir / "rnn", "matrnn", 1, {0.7, 0.65, 0.6}, {110, 100, 98})));
  learning_curves(dir / "curves.svg", runs, {});
  const std::string svg = file_bytes(dir / "curves.svg");
  REQUIRE(svg_well_formed(svg));
  CHECK(svg_has_text(svg, "training step"));
  CHECK(svg_has_text(svg, "bits wrong per sequence"));
  CHECK(svg_has_text(svg, "loss per element"));
  CHECK(svg_has_text(svg, "Binary cross-entropy loss"));
  CHECK(svg_has_text(svg, "Bit errors per sequence"));
  CHECK(svg_has_text(svg, "matntm copy: median of 3 seeds, min–max band"));
  CHECK(svg_has_text(svg, "matrnn copy (seed 1)"));
  CHECK_FALSE(svg_has_text(svg, "matntm copy (seed"));
}

TEST_CASE("plot: --x sequences puts steps × each run's batch on the x axis, a run without a batch is refused",
          "[plot]") {
  const fs::path dir = fresh_dir("plot_sequences");
  Run a = read_run(write_run(dir / "a", "matntm", 1, {0.7, 0.5, 0.1, 0.05}, {100, 50, 2, 1}));
  Run b = read_run(write_run(dir / "b", "matrnn", 1, {0.7, 0.6, 0.5, 0.4}, {100, 90, 80, 70}));
  a.config["batch"] = "16";
  b.config["batch"] = "4";
  CurveOptions o;
  o.metric = CurveOptions::Metric::bits;
  const std::vector<PlotArea> steps = learning_curves(dir / "steps.svg", {a, b}, o);
  o.x_sequences = true;
  const std::vector<PlotArea> seqs = learning_curves(dir / "seqs.svg", {a, b}, o);
  REQUIRE(seqs.size() == 1);
  CHECK(steps[0].x_max >= 200);  // steps 50..200
  CHECK(steps[0].x_max < 16 * 200);
  CHECK(seqs[0].x_max >= 16 * 200);  // run a's last step, 200, is 3,200 sequences
  const std::string svg = file_bytes(dir / "seqs.svg");
  CHECK(svg_has_text(svg, "sequences seen"));
  CHECK_FALSE(svg_has_text(svg, "training step"));
  b.config.erase("batch");
  CHECK_THROWS_WITH(learning_curves(dir / "none.svg", {a, b}, o), Catch::Contains("no batch"));
}

// A loss near 0.7 that changes in the third decimal: PLplot alone would number its axis 6.90 … 7.10 with a
// separate "(x10^-1)" note over the axis, which the long y label ran into; the numbers are written in full.
TEST_CASE("plot: a line plot's numbers are written in full, without a separate power-of-ten note", "[plot]") {
  const fs::path dir = fresh_dir("plot_numbers");
  LinePlot p;
  p.x_label = "training step";
  p.y_label = "loss";
  p.lines.push_back({"a run", {50, 100, 150, 200, 250, 300}, {0.7127, 0.6956, 0.6936, 0.6925, 0.6912, 0.6871}, {}, {}, 0,
                     false, false});
  {
    Figure f(dir / "numbers.svg", 800, 560);
    f.lines({0, 1, 0, 1}, p);
    f.finish();
  }
  const std::vector<std::string> texts = svg_texts(file_bytes(dir / "numbers.svg"));
  for (const std::string& t : texts) CHECK(t.find("x10") == std::string::npos);
  for (const char* number : {"0.690", "0.695", "0.700", "0.705", "0.710", "50", "300"})
    CHECK(std::count(texts.begin(), texts.end(), std::string(number)) == 1);
}

// The y label is written along the plot's left side, within its height, however long; the x axis's last
// number, centred on the plot's right edge, stays half a character clear of the page's.
TEST_CASE("plot: a long y label stays within the plot's height, the last x number within the page", "[plot]") {
  const fs::path dir = fresh_dir("plot_fit");
  for (const auto& [width, height] : {std::pair{800, 560}, std::pair{1400, 560}, std::pair{640, 300}}) {
    LinePlot p;
    p.title = "Loss";
    p.x_label = "training step";
    p.y_label = "loss (binary cross-entropy per element)";
    p.legend_at = LinePlot::LegendAt::above;
    p.lines.push_back({"a run", {50, 150, 300}, {0.7, 0.6, 0.65}, {}, {}, 0, false, false});
    const fs::path file = dir / fmt::format("fit{}x{}.svg", width, height);
    PlotArea a;
    {
      Figure f(file, width, height);
      a = f.lines({0, 1, 0, 1}, p);
      f.finish();
    }
    int labels = 0, last = 0;
    for (const PlacedText& t : placed_texts(file_bytes(file))) {
      if (t.text == p.y_label) {
        ++labels;
        CHECK_FALSE(t.upright);
        const double centre = height - t.y;  // from the top
        CHECK(centre - text_width(t) / 2 >= a.top);
        CHECK(centre + text_width(t) / 2 <= a.bottom);
      }
      if (t.text == "300" && t.upright) {
        ++last;
        CHECK(t.x + text_width(t) / 2 <= width - 0.5 * t.size);
      }
    }
    CHECK(labels == 1);
    CHECK(last == 1);
  }
}

TEST_CASE("plot: a heatmap's pixels follow the data, the colour map's brightness rises with the value", "[plot]") {
  const fs::path dir = fresh_dir("plot_heatmap");
  Heatmap m;
  m.rows = 5;
  m.cols = 7;
  m.values.assign(35, 0.1);
  m.values[std::size_t(1 * 7 + 5)] = 1.0;  // the largest: row 1, column 5
  m.values[std::size_t(3 * 7 + 2)] = 0.0;  // the smallest: row 3, column 2
  m.v_min = 0, m.v_max = 1;
  PlotArea a;
  {
    Figure f(dir / "map.png", 700, 500);
    a = f.heatmap({0, 1, 0, 1}, m);
    f.finish();
  }
  const Pixels px = read_png(dir / "map.png");
  REQUIRE(px.width == 700);
  REQUIRE(px.height == 500);
  // The brightest cell on the page (mean luminance over its middle half) is the largest value's, the darkest
  // the smallest value's.
  double best = -1, worst = 1e9;
  std::pair<int, int> brightest, darkest;
  const double cw = (a.right - a.left) / double(m.cols), ch = (a.bottom - a.top) / double(m.rows);
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c) {
      double sum = 0;
      int n = 0;
      for (int y = int(a.top + (r + 0.25) * ch); y < int(a.top + (r + 0.75) * ch); ++y)
        for (int x = int(a.left + (c + 0.25) * cw); x < int(a.left + (c + 0.75) * cw); ++x) sum += px.luminance(x, y), ++n;
      if (sum / n > best) best = sum / n, brightest = {r, c};
      if (sum / n < worst) worst = sum / n, darkest = {r, c};
    }
  CHECK(brightest == std::pair<int, int>{1, 5});
  CHECK(darkest == std::pair<int, int>{3, 2});
  // Every cell's centre has the colour map's colour for its value.
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c) {
      const int x = int(a.left + (c + 0.5) * (a.right - a.left) / m.cols), y = int(a.top + (r + 0.5) * (a.bottom - a.top) / m.rows);
      const Rgb want = colour_map(m.values[std::size_t(r * m.cols + c)]);
      const std::uint8_t* got = px.at(x, y);
      INFO("cell " << r << "," << c);
      CHECK(std::abs(got[0] - want.r) <= 6);
      CHECK(std::abs(got[1] - want.g) <= 6);
      CHECK(std::abs(got[2] - want.b) <= 6);
    }
  double previous = -1;
  for (int k = 0; k <= 20; ++k) {  // a greyscale print still orders the values
    const Rgb c = colour_map(k / 20.0);
    const double l = 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
    CHECK(l > previous);
    previous = l;
  }
}

TEST_CASE("plot: the band over three seeds lies between their min and max, the median line at the middle run", "[plot]") {
  const fs::path dir = fresh_dir("plot_band");
  std::vector<Run> runs;
  const double level[3] = {1.0, 2.0, 4.0};
  for (int s = 0; s < 3; ++s) {
    const std::vector<double> v(12, level[s]);
    runs.push_back(read_run(write_run(dir / fmt::format("run{}", s), "matntm", s + 1, v, v)));
  }
  CurveOptions o;
  o.metric = CurveOptions::Metric::loss;
  const std::vector<PlotArea> areas = learning_curves(dir / "band.png", runs, o);
  REQUIRE(areas.size() == 1);
  const PlotArea& a = areas[0];
  const Pixels px = read_png(dir / "band.png");
  REQUIRE(px.width == 800);
  const double lo_row = row_of(a, 1.0), hi_row = row_of(a, 4.0), median_row = row_of(a, 2.0);
  const Rgb blue = line_colour(0);
  for (double step : {75.0, 100.0, 125.0}) {  // columns clear of the legend (top right)
    const int x = int(column_of(a, step));
    int band_top = -1, band_bottom = -1, line_row = -1;
    for (int y = int(a.top) + 2; y < int(a.bottom) - 2; ++y) {
      const std::uint8_t* p = px.at(x, y);
      const bool line = std::abs(p[0] - blue.r) < 40 && std::abs(p[1] - blue.g) < 40 && std::abs(p[2] - blue.b) < 40;
      const bool band = !line && p[2] > p[0] + 15 && p[0] < 240;  // the line's blue, translucent over white
      if (line && line_row < 0) line_row = y;
      if (band || line) {
        if (band_top < 0) band_top = y;
        band_bottom = y;
      }
    }
    INFO("step " << step << ": band rows " << band_top << ".." << band_bottom << ", expected " << hi_row << ".." << lo_row);
    CHECK(band_top >= hi_row - 2);
    CHECK(band_bottom <= lo_row + 2);
    CHECK(band_bottom - band_top >= (lo_row - hi_row) - 4);  // and it fills the span
    CHECK(std::abs(line_row - median_row) <= 3);
  }
}

TEST_CASE("plot: aggregate gives median and min–max or quartiles per step, NaN windows are left out", "[plot]") {
  const std::vector<std::vector<double>> x = {{1, 2}, {1, 2}, {1, 2}, {1, 2}, {1}};
  const std::vector<std::vector<double>> y = {{1, 5}, {2, NAN}, {3, 7}, {4, 9}, {100}};
  const Curve mm = aggregate(x, y, Spread::minmax);
  REQUIRE(mm.x == std::vector<double>{1, 2});
  CHECK(mm.median == std::vector<double>{3, 7});
  CHECK(mm.lo == std::vector<double>{1, 5});
  CHECK(mm.hi == std::vector<double>{100, 9});
  const Curve iq = aggregate(x, y, Spread::iqr);
  CHECK(iq.lo[0] == Approx(2.0));  // of 1,2,3,4,100
  CHECK(iq.hi[0] == Approx(4.0));
  CHECK(iq.lo[1] == Approx(6.0));  // of 5,7,9
  CHECK(iq.hi[1] == Approx(8.0));
}

TEST_CASE("plot: smooth is a centred moving average that skips NaN", "[plot]") {
  CHECK(smooth({1, 2, 3}, 1) == std::vector<double>{1, 2, 3});
  const std::vector<double> s = smooth({0, 3, 6, NAN, 12}, 3);
  CHECK(s[0] == Approx(1.5));
  CHECK(s[1] == Approx(3.0));
  CHECK(s[2] == Approx(4.5));
  CHECK(s[3] == Approx(9.0));
  CHECK(s[4] == Approx(12.0));
}

TEST_CASE("plot: runs differing only by seed are one group, a differing key is named in the labels", "[plot]") {
  const fs::path dir = fresh_dir("plot_groups");
  std::vector<Run> runs;
  runs.push_back(read_run(write_run(dir / "a1", "matntm", 1, {1}, {1})));
  runs.push_back(read_run(write_run(dir / "a2", "matntm", 2, {1}, {1})));
  runs.push_back(read_run(write_run(dir / "b1", "matntm", 1, {1}, {1}, "0.001")));
  runs.push_back(read_run(write_run(dir / "c1", "matrnn", 1, {1}, {1})));
  const std::vector<RunGroup> g = group_runs(runs);
  REQUIRE(g.size() == 3);
  CHECK(g[0].runs == std::vector<std::size_t>{0, 1});
  CHECK(g[0].label == "matntm copy, lr=0.0001");
  CHECK(g[1].label == "matntm copy, lr=0.001");
  CHECK(g[2].label == "matrnn copy");  // no other matrnn group to tell it from
}

TEST_CASE("plot: a key only newer runs have does not label them, and groups alike in their keys are named by directory",
          "[plot]") {
  const fs::path dir = fresh_dir("plot_versions");
  write_run(dir / "old" / "seed1", "matntm", 1, {1}, {1}, "0.0001");
  write_run(dir / "new" / "seed1", "matntm", 1, {1}, {1}, "1e-4");
  write_run(dir / "new" / "seed2", "matntm", 2, {1}, {1}, "0.0001");
  write_run(dir / "lr", "matntm", 1, {1}, {1}, "0.001");
  // Written after the keys below existed, clip.norm once as 0 and once as 0.0.
  for (const char* run : {"new/seed1", "new/seed2", "lr"}) {
    std::ifstream in(dir / run / "config.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const bool whole = std::string(run) == "new/seed1";
    text.insert(text.rfind('}'), whole ? ", \"ntm.forget_bias\": 0.0, \"clip.norm\": 0"
                                       : ", \"ntm.forget_bias\": 0.0, \"clip.norm\": 0.0");
    std::ofstream(dir / run / "config.json") << text;
  }
  std::vector<Run> runs;
  for (const char* run : {"old/seed1", "new/seed1", "new/seed2", "lr"}) runs.push_back(read_run(dir / run));
  // A run resumed by a newer version, its config.json rewritten with the keys added since, stays in its group.
  write_run(dir / "old" / "seed2", "matntm", 2, {1}, {1}, "0.0001");
  runs.push_back(read_run((dir / "old" / "seed2").string() + "/"));
  runs.back().config["clip.norm"] = "0";
  runs.back().config["ntm.forget_bias"] = "1";
  const std::vector<RunGroup> g = group_runs(runs);
  REQUIRE(g.size() == 3);
  CHECK(g[0].runs == std::vector<std::size_t>{0, 4});
  CHECK(g[1].runs == std::vector<std::size_t>{1, 2});  // 1e-4 and 0.0001, 0 and 0.0: one value each
  CHECK(g[0].label == "matntm copy, lr=0.0001 (old)");
  CHECK(g[1].label == "matntm copy, lr=0.0001 (new)");
  CHECK(g[2].label == "matntm copy, lr=0.001");
}

TEST_CASE("plot: a run directory without metrics is refused naming the file", "[plot]") {
  const fs::path dir = fresh_dir("plot_missing");
  CHECK_THROWS_WITH(read_run(dir / "nothing"), Catch::Contains("nothing") && Catch::Contains("no such run directory"));
  fs::create_directories(dir / "half");
  std::ofstream(dir / "half" / "config.json") << "{\"model\": \"matrnn\"}";
  CHECK_THROWS_WITH(read_run(dir / "half"), Catch::Contains("metrics.csv") && Catch::Contains("cannot read"));
  std::ofstream(dir / "half" / "metrics.csv") << "step,loss,bits_per_sequence\n50,0.5,oops\n";
  CHECK_THROWS_WITH(read_run(dir / "half"), Catch::Contains("metrics.csv:2") && Catch::Contains("'oops'"));
}

TEST_CASE("plot: capacity curves put eq. 12 and the exact curve side by side, a sweep draws J_tot by N", "[plot]") {
  const fs::path dir = fresh_dir("plot_capacity");
  const std::vector<double> i = {0, 1, 2}, j = {0.5, 0.25, 0.1}, s = {0.5, 0.75, 0.85};
  capacity_chart(dir / "fmc.svg", "Fisher memory curve", {"i", "J_eq12", "sum_eq12", "J_exact", "sum_exact"},
                 {i, j, s, j, s});
  const std::string svg = file_bytes(dir / "fmc.svg");
  REQUIRE(svg_well_formed(svg));
  CHECK(svg_has_text(svg, "Fisher memory J(i)"));
  CHECK(svg_has_text(svg, "matrix RNN, eq. 12"));
  CHECK(svg_has_text(svg, "matrix RNN, exact"));
  const std::vector<double> n = {2, 3}, v = {0.5, 0.6};
  capacity_chart(dir / "sweep.png", "sweep", {"N", "neurons", "Jtot_vec", "rel_vec", "sd_vec", "min_vec", "max_vec"},
                 {n, {4, 9}, v, v, {0, 0}, v, v});
  CHECK(png_header(dir / "sweep.png").width == 800);
}

TEST_CASE("plot: a window onto a circular memory goes on from the last slot to slot 0, numbered every tick step", "[plot]") {
  std::vector<std::int64_t> slots;
  for (std::int64_t r = 0; r < 25; ++r) slots.push_back(window_slot(99, r, 120));
  std::vector<std::int64_t> want;
  for (std::int64_t s = 99; s < 120; ++s) want.push_back(s);
  for (std::int64_t s = 0; s <= 3; ++s) want.push_back(s);
  CHECK(slots == want);
  CHECK(window_slot(5, 3, 120) == 8);  // a window that does not wrap is numbered as it is
  CHECK(tick_step(25) == 5);
  CHECK(tick_step(10) == 1);
  CHECK(tick_step(16) == 2);
  CHECK(tick_step(120) == 20);
  CHECK(tick_step(101) == 20);
  CHECK(window_ticks(99, 25, 120) == std::vector<Tick>{{1, 100}, {6, 105}, {11, 110}, {16, 115}, {21, 0}});
  CHECK(window_ticks(10, 6, 12) == std::vector<Tick>{{0, 10}, {1, 11}, {2, 0}, {3, 1}, {4, 2}, {5, 3}});
}

TEST_CASE("plot: a wrapped heatmap numbers its rows with their slots, never past the last", "[plot]") {
  const fs::path dir = fresh_dir("plot_wrapped");
  Heatmap m;
  m.rows = 25, m.cols = 4;
  m.values.assign(100, 0.5);
  m.y_first = 99, m.y_wrap = 120;
  m.x_first = 1000;  // the columns' numbers stay apart from the rows'
  m.y_label = "memory slot";
  {
    Figure f(dir / "wrapped.svg", 600, 500);
    f.heatmap({0, 1, 0, 1}, m);
    f.finish();
  }
  const std::vector<std::string> texts = svg_texts(file_bytes(dir / "wrapped.svg"));
  std::vector<std::string> numbers;  // the rows' numbers: those below the columns' 1000…
  for (const std::string& t : texts)
    if (!t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }) && std::stol(t) < 1000)
      numbers.push_back(t);
  CHECK(numbers == std::vector<std::string>{"100", "105", "110", "115", "0"});  // from the top, as window_ticks
}

TEST_CASE("plot: the inspect sheet draws a window past the last slot with the slots' own numbers", "[plot]") {
  const fs::path dir = fresh_dir("plot_inspect_wrapped");
  InspectData d;
  d.title = "wrapped";
  const Matrix frame{2, 2, {0, 1, 1, 0}};
  d.inputs.assign(3, frame);
  d.target_steps = {2};
  d.targets = d.outputs = {frame};
  InspectData::Weighting w{"write1/weighting", std::vector<std::vector<double>>(3, std::vector<double>(120, 0.0))};
  w.w[0][119] = 1, w.w[1][0] = 1, w.w[2][0] = 1;  // the head moves from the last slot to the first
  d.weightings.push_back(w);
  d.memory.assign(3, std::vector<Matrix>(120, frame));
  inspect_sheet(dir / "sheet.svg", d);
  const std::string svg = file_bytes(dir / "sheet.svg");
  REQUIRE(svg_well_formed(svg));
  // Slots 119 and 0, seven more each side: 112–7, numbered every second slot.
  CHECK(svg_has_text(svg, "write head 1 weighting (slots 112–119, 0–7 of 120)"));
  const std::vector<std::string> texts = svg_texts(svg);
  for (const char* number : {"112", "114", "116", "118", "4", "6"})  // (2 also numbers a time step)
    CHECK(std::count(texts.begin(), texts.end(), std::string(number)) == 1);
  for (int past = 120; past <= 127; ++past) CHECK(std::count(texts.begin(), texts.end(), std::to_string(past)) == 0);
}

TEST_CASE("plot: the inspect sheet of 5 + 5 heads draws every weighting, four to a row", "[plot]") {
  // Graves' priority sort's heads: ten panels, which in one row left each no room for its axes (PLplot refused
  // the viewport and the picture lost its panels).
  const fs::path dir = fresh_dir("plot_inspect_heads");
  InspectData d;
  d.title = "ten heads";
  const Matrix frame{1, 8, {0, 1, 1, 0, 1, 0, 0, 1}};
  d.inputs.assign(6, frame);
  d.target_steps = {4, 5};
  d.targets = d.outputs = {frame, frame};
  for (const char* kind : {"read", "write"})
    for (int h = 1; h <= 5; ++h) {
      InspectData::Weighting w{fmt::format("{}{}/weighting", kind, h),
                               std::vector<std::vector<double>>(6, std::vector<double>(32, 0.0))};
      for (int t = 0; t < 6; ++t) w.w[std::size_t(t)][std::size_t(h + t)] = 1;
      d.weightings.push_back(w);
    }
  d.memory.assign(6, std::vector<Matrix>(32, frame));
  for (const char* ext : {"sheet.svg", "sheet.png"}) CHECK_NOTHROW(inspect_sheet(dir / ext, d));
  const std::string svg = file_bytes(dir / "sheet.svg");
  REQUIRE(svg_well_formed(svg));
  const std::vector<std::string> texts = svg_texts(svg);
  for (const char* kind : {"read", "write"})
    for (int h = 1; h <= 5; ++h) {
      const std::string title = fmt::format("{} head {} weighting (slots", kind, h);
      INFO(title);
      CHECK(std::count_if(texts.begin(), texts.end(), [&](const std::string& t) { return t.rfind(title, 0) == 0; }) == 1);
    }
}

TEST_CASE("plot: a drawing PLplot refuses is an error naming the picture, not a picture with parts missing",
          "[plot]") {
  const fs::path dir = fresh_dir("plot_refused");
  Heatmap m;
  m.rows = 2, m.cols = 2, m.values = {0, 1, 1, 0};
  m.colour_bar = true;
  m.axes = true;
  Figure f(dir / "narrow.svg", 600, 500);
  f.heatmap({0.40, 0.42, 0, 1}, m);  // 12 pixels wide: no room for the axes and the colour bar
  CHECK_THROWS_WITH(f.finish(), Catch::Contains("PLplot could not draw all of") && Catch::Contains("narrow.svg"));
}

TEST_CASE("plot: the inspect sheet of a long sequence keeps the numbers on each line apart", "[plot]") {
  // keep/discard's 88 steps, 16 slots, a DNC's three panels to a row: one number a step under the frames, one
  // slot a written frame and ten time-step ticks a panel ran into each other ("1011121314…").
  const fs::path dir = fresh_dir("plot_inspect_long");
  const std::int64_t T = 88, N = 16;
  InspectData d;
  d.title = "long";
  const Matrix frame{2, 2, {0, 1, 1, 0}};
  d.inputs.assign(T, frame);
  d.target_steps = {80, 81, 82, 83, 84, 85, 86, 87};
  d.targets = d.outputs = std::vector<Matrix>(8, frame);
  InspectData::Weighting usage{"usage", std::vector<std::vector<double>>(T, std::vector<double>(N, 0.5))};
  InspectData::Weighting write{"write1/weighting", std::vector<std::vector<double>>(T, std::vector<double>(N, 0.0))};
  for (std::int64_t t = 0; t < T; ++t) write.w[std::size_t(t)][std::size_t((10 + 3 * t) % N)] = 1;  // 10, 13, 0, …
  InspectData::Weighting read{"read1/weighting", write.w};
  d.slot_states = {usage};
  d.weightings = {write, read};
  d.memory.assign(T, std::vector<Matrix>(N, frame));
  d.circular = false;
  inspect_sheet(dir / "sheet.svg", d);
  const std::string svg = file_bytes(dir / "sheet.svg");
  REQUIRE(svg_well_formed(svg));
  std::map<long, std::vector<PlacedText>> lines;  // the numbers, by the line (y) they stand on
  for (const PlacedText& p : placed_texts(svg))
    if (p.upright && is_number(p.text) && p.text.find('.') == std::string::npos) lines[std::lround(p.y)].push_back(p);
  std::size_t numbers = 0;
  for (auto& [y, line] : lines) {
    std::sort(line.begin(), line.end(), [](const PlacedText& a, const PlacedText& b) { return a.x < b.x; });
    for (std::size_t k = 1; k < line.size(); ++k) {
      // Centred numbers, at least a third of their size between them.
      const PlacedText &a = line[k - 1], &b = line[k];
      INFO("line at y " << y << ": " << a.text << " at x " << a.x << ", " << b.text << " at x " << b.x);
      CHECK(b.x - a.x >= (text_width(a) + text_width(b)) / 2 + b.size / 3);
    }
    numbers += line.size();
  }
  // Still numbered: the steps every 5 (0 … 85), the written slots, each panel's time ticks.
  CHECK(numbers >= 18 + 20 + 3 * 4);
  const std::vector<std::string> texts = svg_texts(svg);
  for (const char* step : {"0", "5", "40", "85"}) CHECK(std::count(texts.begin(), texts.end(), std::string(step)) >= 1);
}
