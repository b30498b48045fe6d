// The picture commands run as a user runs them: matmem plot, inspect, eval --plot, capacity --plot, and the
// line `matmem train` ends with. Tiny runs (a few steps of small models) keep them quick.
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>
#include <regex>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "matmem/tests/tools/command.hpp"
#include "matmem/tests/tools/plot_check.hpp"

using namespace matmem::testing;
namespace fs = std::filesystem;

namespace {
// A small MatNTM (12 slots) and a MatRNN trained a few steps on copy, in a directory of the test's own (ctest
// runs test cases in parallel processes).
fs::path trained_runs(const std::string& name) {
  const fs::path dir = [&] {
    const fs::path d = fresh_dir(name);
    const std::string small = "--steps 20 --set log_every=5 --set task.max_length=4 --set batch=4";
    run_matmem("train --model matntm --set ntm.slots=12 " + small + " --out ntm", d, 300);
    run_matmem("train --model matrnn " + small + " --out rnn", d, 300);
    return d;
  }();
  return dir;
}

// `matmem inspect ARGS --out NAME` in `dir`: it succeeds and says it wrote NAME, a well-formed SVG, returned.
std::string inspect_svg(const std::string& args, const std::string& name, const fs::path& dir) {
  const CommandResult r = run_matmem("inspect " + args + " --out " + name, dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("wrote " + name) != std::string::npos);
  const std::string svg = file_bytes(dir / name);
  REQUIRE(svg_well_formed(svg));
  return svg;
}
}  // namespace

TEST_CASE("plot command: draws the runs, prints the file it wrote, a wrong extension is refused first", "[plot]") {
  const fs::path runs = trained_runs("plot_command_runs");
  REQUIRE(fs::exists(runs / "ntm" / "checkpoint.safetensors"));
  const CommandResult r = run_matmem("plot ntm rnn --out curves.png --smooth 2 --log", runs);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("wrote curves.png") != std::string::npos);
  const PngHeader h = png_header(runs / "curves.png");
  CHECK(h.signature);
  CHECK(h.width == 1400);
  CHECK(h.height == 560);
  const CommandResult bad = run_matmem("plot ntm --out curves.pdf", runs);
  CHECK(bad.refused());
  CHECK(bad.output.find(".png or .svg") != std::string::npos);
  CHECK_FALSE(fs::exists(runs / "curves.pdf"));
  const CommandResult none = run_matmem("plot no_such_run --out x.png", runs);
  CHECK(none.refused());
  CHECK(none.output.find("no_such_run: no such run directory") != std::string::npos);
}

TEST_CASE("plot command: train ends with where its run is and a plot command that works", "[plot]") {
  const fs::path dir = fresh_dir("plot_train_hint");
  const CommandResult t = run_matmem("train --model matrnn --steps 10 --set log_every=5 --set batch=4 --out run", dir, 300);
  REQUIRE(t.status == 0);
  const std::string last = t.output.substr(t.output.rfind('\n', t.output.size() - 2) + 1);
  INFO(last);
  CHECK(t.output.find("checkpoint: run/checkpoint.safetensors, learning curve: run/metrics.csv") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(last, m, std::regex("plot it: \\S+ (plot run --out run/learning_curve.png)")));
  const CommandResult p = run_matmem(m[1].str(), dir);
  CHECK(p.status == 0);
  CHECK(png_header(dir / "run" / "learning_curve.png").signature);
}

TEST_CASE("inspect command: a MatNTM's sheet has its frames and both heads' weightings, a MatRNN's says it has none", "[plot]") {
  const fs::path runs = trained_runs("plot_inspect_runs");
  const std::string svg = inspect_svg("--checkpoint ntm --length 3 --seed 5", "ntm.svg", runs);
  for (const char* word : {"input", "target", "output", "memory", "read head 1 weighting", "write head 1 weighting",
                           "memory slot", "time step", "matntm on copy, length 3"})
    CHECK(svg_has_text(svg, word));
  const CommandResult png = run_matmem("inspect --checkpoint ntm --out ntm.png", runs);
  CHECK(png.status == 0);
  CHECK(png_header(runs / "ntm.png").width == 1500);
  const std::string rs = inspect_svg("--checkpoint rnn --length 3", "rnn.svg", runs);
  CHECK(svg_has_text(rs, "exposes no memory or weightings"));
  CHECK_FALSE(svg_has_text(rs, "weighting (slots"));
  const CommandResult items = run_matmem("inspect --checkpoint ntm --items 3 --out x.png", runs);
  CHECK(items.refused());
  CHECK(items.output.find("--items is for the recall task") != std::string::npos);
}

// inspect --csv: the values drawn, as numbers. The copy run of length 3 has 2·3 + 1 = 7 time steps of 6×5 input
// frames and 3 targets of 5×5; each weighting is [time][slot] over the 12 slots and sums to 1 a step; outputs are
// probabilities, and rounding them against the targets gives the bits wrong the summary line prints.
TEST_CASE("inspect --csv: every drawn frame, output and weighting as numbers that agree with the summary", "[plot]") {
  const fs::path runs = trained_runs("plot_inspect_csv");
  const CommandResult r = run_matmem("inspect --checkpoint ntm --length 3 --seed 5 --out ntm.svg --csv ntm.csv", runs);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("wrote ntm.svg and ntm.csv") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(r.output, m, std::regex(": (\\d+) bits wrong")));
  const int printed_bits = std::stoi(m[1].str());
  std::istringstream in(file_bytes(runs / "ntm.csv"));
  std::string line;
  std::getline(in, line);
  CHECK(line == "time,series,row,col,value");
  std::map<std::string, int> count;
  std::map<std::pair<std::string, int>, double> weight_sum, weight_max;  // (series, time) -> Σ, max over slots
  std::map<std::tuple<int, int, int>, double> target, output;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string t, series, i, j, v;
    std::getline(row, t, ','), std::getline(row, series, ','), std::getline(row, i, ','), std::getline(row, j, ',');
    std::getline(row, v);
    const double value = std::stod(v);
    ++count[series];
    if (series.find("/weighting") != std::string::npos) {
      weight_sum[{series, std::stoi(t)}] += value;
      double& top = weight_max[{series, std::stoi(t)}];
      top = std::max(top, value);
    }
    if (series == "target") target[{std::stoi(t), std::stoi(i), std::stoi(j)}] = value;
    if (series == "output") {
      CHECK(value > 0);
      CHECK(value < 1);
      output[{std::stoi(t), std::stoi(i), std::stoi(j)}] = value;
    }
  }
  CHECK(count["input"] == 7 * 6 * 5);
  CHECK(count["target"] == 3 * 5 * 5);
  CHECK(count["output"] == 3 * 5 * 5);
  CHECK(count["read1/weighting"] == 7 * 12);
  CHECK(count["write1/weighting"] == 7 * 12);
  CHECK(count.count("memory") == 0);
  for (const auto& [key, sum] : weight_sum) {
    INFO(key.first << " at " << key.second);
    CHECK(sum == Approx(1.0).margin(1e-4));
  }
  int bits = 0;
  for (const auto& [at, y] : output) bits += (y > 0.5) != (target.at(at) > 0.5);
  CHECK(bits == printed_bits);
  // The summary's line a head: the means over the 7 steps of the largest weight and of the sum, the CSV's.
  CHECK(r.output.find("heads, means over the 7 time steps of the largest weight (1/12 = 0.083 if spread evenly)") !=
        std::string::npos);
  for (const char* head : {"read1/weighting", "write1/weighting"}) {
    INFO(head);
    double largest = 0, sum = 0;
    for (int t = 0; t < 7; ++t) largest += weight_max.at({head, t}) / 7, sum += weight_sum.at({head, t}) / 7;
    std::smatch h;
    REQUIRE(std::regex_search(r.output, h, std::regex(std::string(head) + " +largest ([0-9.]+)  sum ([0-9.]+)")));
    CHECK(std::stod(h[1].str()) == Approx(largest).margin(6e-4));
    CHECK(std::stod(h[2].str()) == Approx(sum).margin(6e-4));
  }
  // To standard output: the CSV alone there, the summary on standard error.
  const CommandResult out = run_matmem("inspect --checkpoint ntm --length 3 --out x.svg --csv -", runs);
  CHECK(out.status == 0);
  CHECK(out.output.find("time,series,row,col,value") != std::string::npos);
}

TEST_CASE("inspect command: a MatDNC's sheet adds its usage, allocation and link matrices to its weightings", "[plot]") {
  const fs::path dir = fresh_dir("plot_inspect_dnc");
  const CommandResult t = run_matmem(
      "train --model matdnc --steps 20 --set log_every=5 --set task.max_length=4 --set batch=4 --set dnc.slots=16 "
      "--out dnc",
      dir, 300);
  REQUIRE(t.status == 0);
  const std::string svg = inspect_svg("--checkpoint dnc --length 3 --seed 5", "dnc.svg", dir);
  // The panels below the frames, in the order drawn: the slots × time heatmaps on one plain range of the 16
  // slots (a DNC's memory is no ring: the range never wraps), then L at the end of the input (the delimiter,
  // step 3 of 0–6) and at the last step.
  std::vector<std::string> panels;
  const std::regex slots_title("(.+) \\(slots \\d+–\\d+ of 16\\)");
  for (const std::string& text : svg_texts(svg)) {
    std::smatch m;
    if (std::regex_match(text, m, slots_title)) panels.push_back(m[1].str());
    else if (text.rfind("link matrix", 0) == 0) panels.push_back(text);
  }
  CHECK(panels == std::vector<std::string>{"usage", "allocation weighting", "write head 1 weighting",
                                           "read head 1 weighting", "link matrix L at step 3 (end of the input)",
                                           "link matrix L at step 6 (the last step)"});
  for (const char* word : {"input", "target", "output", "memory", "memory slot", "time step", "slot j",
                           "slot i, written after j", "matdnc on copy, length 3"})
    CHECK(svg_has_text(svg, word));
  const CommandResult png = run_matmem("inspect --checkpoint dnc --out dnc.png", dir);
  CHECK(png.status == 0);
  CHECK(png_header(dir / "dnc.png").width == 1500);
  // A MatNTM's sheet has none of the DNC's panels.
  REQUIRE(run_matmem("train --model matntm --set ntm.slots=12 --steps 5 --set batch=4 --out ntm", dir, 300).status == 0);
  const std::string ntm = inspect_svg("--checkpoint ntm --length 3", "ntm.svg", dir);
  CHECK(svg_has_text(ntm, "write head 1 weighting"));
  for (const char* word : {"usage", "allocation weighting", "link matrix"}) CHECK_FALSE(svg_has_text(ntm, word));
}

TEST_CASE("inspect command: a task sized otherwise than by length or items draws the middle of its training range",
          "[plot]") {
  const fs::path dir = fresh_dir("plot_inspect_size");
  REQUIRE(run_matmem("train --model matdnc --task keep_discard --steps 2 --set batch=4 --set task.rows=2 "
                     "--set task.cols=2 --set task.min_subsequences=3 --set task.max_subsequences=6 --out kd",
                     dir, 300)
              .status == 0);
  CHECK(svg_has_text(inspect_svg("--checkpoint kd", "kd.svg", dir), "matdnc on keep_discard, subsequences 5"));
  CHECK(svg_has_text(inspect_svg("--checkpoint kd --items 3", "kd3.svg", dir), "matdnc on keep_discard, subsequences 3"));
  // Keep (2 matrices) at steps 0–1, its delimiter 2; a discard (3) at 3–5, its delimiter 6, its copy-back 7–9; the
  // recall delimiter 10, the keep one's copy-back 11–12: the input ends at 10, not before the discard's targets.
  REQUIRE(run_matmem("train --model matdnc --task keep_discard --steps 2 --set batch=4 --set task.rows=2 "
                     "--set task.cols=2 --set task.keep=1 --set task.min_subsequences=2 --set task.max_subsequences=2 "
                     "--set task.min_keep_length=2 --set task.max_keep_length=2 --set task.min_discard_length=3 "
                     "--set task.max_discard_length=3 --out kd2",
                     dir, 300)
              .status == 0);
  const std::string two = inspect_svg("--checkpoint kd2", "kd2.svg", dir);
  CHECK(svg_has_text(two, "link matrix L at step 10 (end of the input)"));
  CHECK(svg_has_text(two, "link matrix L at step 12 (the last step)"));
}

TEST_CASE("inspect command: a run on frames as rows (task.flatten) draws them in the task's own shapes", "[plot]") {
  // The same task and sequence with and without task.flatten: the sheets are the same size only if the flat
  // frames (1x12 in, 1x9 out) are drawn as the 4x3 and 3x3 frames they hold.
  const fs::path dir = fresh_dir("plot_inspect_flat");
  for (const char* flat : {"false", "true"}) {
    const CommandResult t = run_matmem(fmt::format("train --task repeat_copy --steps 2 --set batch=2 --set task.rows=2 "
                                                   "--set task.cols=3 --set ntm.slots=12 --set task.flatten={} --out {}",
                                                   flat, flat),
                                       dir, 300);
    INFO(t.output);
    REQUIRE(t.status == 0);
    const CommandResult i = run_matmem(fmt::format("inspect --checkpoint {} --length 3 --out {}.png", flat, flat), dir);
    INFO(i.output);
    REQUIRE(i.status == 0);
  }
  CHECK(png_header(dir / "true.png").height == png_header(dir / "false.png").height);
}

TEST_CASE("eval --plot: one line per checkpoint, named in the legend, capacity --plot writes its curves", "[plot]") {
  const fs::path runs = trained_runs("plot_eval_runs");
  const CommandResult r = run_matmem("eval --checkpoint ntm --checkpoint rnn --sizes 2,4 --batches 1 --plot cost.svg", runs);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("wrote cost.svg") != std::string::npos);
  const std::string svg = file_bytes(runs / "cost.svg");
  REQUIRE(svg_well_formed(svg));
  CHECK(svg_has_text(svg, "ntm (matntm, 20 steps)"));
  CHECK(svg_has_text(svg, "rnn (matrnn, 20 steps)"));
  CHECK(svg_has_text(svg, "sequence length (matrices)"));
  const CommandResult c = run_matmem("capacity --kind queue --n 3 --k 10 --plot fmc.svg", runs);
  INFO(c.output);
  REQUIRE(c.status == 0);
  const std::string fmc = file_bytes(runs / "fmc.svg");
  CHECK(svg_has_text(fmc, "queue memory, eq. 41"));
  CHECK(svg_has_text(fmc, "no memory, exact"));
  const CommandResult s = run_matmem("capacity --sweep 2,3 --samples 2 --plot sweep.png", runs);
  CHECK(s.status == 0);
  CHECK(png_header(runs / "sweep.png").signature);
  const CommandResult bad = run_matmem("capacity --plot fmc.gif", runs);
  CHECK(bad.refused());
  CHECK(bad.output.find("--plot fmc.gif") != std::string::npos);
}
