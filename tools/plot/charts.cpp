#include "matmem/tools/plot/charts.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem::tools::plot {

std::vector<PlotArea> learning_curves(const std::filesystem::path& out, const std::vector<Run>& runs,
                                      const CurveOptions& o) {
  if (runs.empty()) throw Error("plot: no runs to draw");
  const std::vector<RunGroup> groups = group_runs(runs);
  struct Panel {
    std::vector<double> Run::*values;
    const char* y_label;
    const char* title;
  };
  std::vector<Panel> panels;
  if (o.metric != CurveOptions::Metric::bits)
    panels.push_back({&Run::loss, "loss per element", "Binary cross-entropy loss"});
  if (o.metric != CurveOptions::Metric::loss)
    panels.push_back({&Run::bits, "bits wrong per sequence", "Bit errors per sequence"});
  const int width = o.width ? o.width : (panels.size() == 2 ? 1400 : 800), height = o.height ? o.height : 560;
  Figure fig(out, width, height);
  std::vector<PlotArea> areas;
  const std::string spread = o.spread == Spread::minmax ? "min–max" : "interquartile";
  for (std::size_t p = 0; p < panels.size(); ++p) {
    LinePlot plot;
    plot.title = panels[p].title;
    if (o.smooth > 1) plot.title += fmt::format(" (moving average of {} points)", o.smooth);
    plot.x_label = o.x_sequences ? "sequences seen" : "training step";
    plot.y_label = panels[p].y_label;
    plot.log_y = o.log_y;
    plot.legend_at = LinePlot::LegendAt::above;  // a converged run's curve lies along the bottom
    for (std::size_t g = 0; g < groups.size(); ++g) {
      std::vector<std::vector<double>> xs, ys;
      for (std::size_t r : groups[g].runs) {
        xs.push_back(runs[r].step);
        if (o.x_sequences)
          for (double& x : xs.back()) x *= double(runs[r].batch());
        ys.push_back(smooth(runs[r].*(panels[p].values), o.smooth));
      }
      const Curve c = aggregate(xs, ys, o.spread);
      Line line;
      const std::size_t n = groups[g].runs.size();
      line.label = n == 1 ? fmt::format("{} (seed {})", groups[g].label, runs[groups[g].runs[0]].seed())
                          : fmt::format("{}: median of {} seeds, {} band", groups[g].label, n, spread);
      line.x = c.x;
      line.y = c.median;
      if (n > 1) line.lo = c.lo, line.hi = c.hi;
      line.colour = int(g);
      plot.lines.push_back(std::move(line));
    }
    const double w = 1.0 / double(panels.size());
    areas.push_back(fig.lines({w * double(p), w * double(p + 1), 0, 1}, plot));
  }
  fig.finish();
  return areas;
}

PlotArea eval_chart(const std::filesystem::path& out, const std::string& size_name, const std::vector<EvalSeries>& runs) {
  Figure fig(out, 800, 560);
  LinePlot plot;
  plot.title = fmt::format("Cost by {} (mean over batches; band: min–max)", size_name == "items" ? "item count" : "sequence length");
  plot.x_label = size_name == "items" ? "items in the sequence" : "sequence length (matrices)";
  plot.y_label = "bits wrong per sequence";
  plot.legend_at = LinePlot::LegendAt::above;
  plot.y_min = 0;  // a count of bit errors
  for (std::size_t k = 0; k < runs.size(); ++k) {
    Line line;
    line.label = runs[k].label;
    line.x = runs[k].size;
    line.y = runs[k].bits;
    line.lo = runs[k].lo;
    line.hi = runs[k].hi;
    line.colour = int(k);
    line.markers = true;
    plot.lines.push_back(std::move(line));
  }
  const PlotArea area = fig.lines({0, 1, 0, 1}, plot);
  fig.finish();
  return area;
}

namespace {

// A capacity column's name as a legend entry, and whether it comes from one of the paper's equations (drawn
// dashed) rather than the exact law.
std::pair<std::string, bool> capacity_label(const std::string& column) {
  auto ends = [&](const char* prefix, std::string* rest) {
    const std::string p(prefix);
    if (column.rfind(p, 0) != 0) return false;
    *rest = column.substr(p.size());
    return true;
  };
  std::string rest;
  if (column == "J" || column == "sum") return {"vector RNN (eq. 14)", false};
  if (column == "J_eq12" || column == "sum_eq12") return {"matrix RNN, eq. 12", true};
  if (column == "J_exact" || column == "sum_exact") return {"matrix RNN, exact", false};
  if (ends("J_eq41_D", &rest)) return {fmt::format("queue memory, eq. 41 (depth {})", rest), true};
  if (column == "sum_eq41") return {"queue memory, eq. 41", true};
  if (column == "J_eq12_nomem") return {"no memory, eq. 12", true};
  if (ends("J_queue_n", &rest)) return {fmt::format("queue memory, exact (horizon {})", rest), false};
  if (column == "sum_queue") return {"queue memory, exact", false};
  if (ends("J_nomem_n", &rest)) return {fmt::format("no memory, exact (horizon {})", rest), false};
  if (column == "sum_nomem") return {"no memory, exact", false};
  if (column == "rel_eq16") return {"matrix RNN, eq. 16", true};
  if (column == "rel_exact") return {"matrix RNN, exact", false};
  if (column == "rel_vec") return {"vector RNN (eq. 14)", false};
  if (column == "rel_eq41") return {"queue memory, eq. 41", true};
  if (ends("rel_queue_n", &rest)) return {fmt::format("queue memory, exact (horizon {})", rest), false};
  return {column, false};
}

std::size_t find_column(const std::vector<std::string>& header, const std::string& name) {
  return std::size_t(std::find(header.begin(), header.end(), name) - header.begin());
}

}  // namespace

std::vector<PlotArea> capacity_chart(const std::filesystem::path& out, const std::string& title,
                                     const std::vector<std::string>& header,
                                     const std::vector<std::vector<double>>& columns) {
  if (header.empty() || header.size() != columns.size()) throw Error("capacity: no table to plot");
  std::vector<PlotArea> areas;
  if (header[0] == "N") {  // a sweep: mean relative J_tot with min–max, by N (Figure 2 D/E)
    Figure fig(out, 800, 560);
    LinePlot plot;
    plot.title = title;
    plot.x_label = "N (N×N state, N² neurons)";
    plot.y_label = "relative capacity J_tot / input information";
    int colour = 0;
    for (std::size_t c = 2; c < header.size(); ++c) {
      const std::string& name = header[c];
      if (name.rfind("rel_", 0) != 0) continue;
      // Its band: the min_/max_ columns that follow it (a sweep's columns come in that order).
      std::string suffix = name.substr(4);
      if (suffix.rfind("queue", 0) == 0) suffix = "queue";
      const std::size_t lo = find_column(header, "min_" + suffix), hi = find_column(header, "max_" + suffix);
      const auto [label, dashed] = capacity_label(name);
      Line line{label, columns[0], columns[c], {}, {}, colour++, dashed, true};
      if (lo < header.size() && hi < header.size()) line.lo = columns[lo], line.hi = columns[hi];
      plot.lines.push_back(std::move(line));
    }
    areas.push_back(fig.lines({0, 1, 0, 1}, plot));
    fig.finish();
    return areas;
  }
  // Curves: J(i) left, running sums right, each series in the same colour in both panels.
  Figure fig(out, 1400, 560);
  LinePlot j, sum;
  j.title = title;
  sum.title = "Running sum Σ J(k), k ≤ i";
  j.x_label = sum.x_label = header[0] == "k" ? "k (steps back)" : "i (steps back)";
  j.y_label = "Fisher memory J(i)";
  sum.y_label = "Σ J(k), k ≤ i";
  // One colour per network (the label before its comma), dashed for the paper's equation, solid for the exact law.
  std::vector<std::string> systems;
  for (std::size_t c = 1; c < header.size(); ++c) {
    if (header[c].rfind("J", 0) != 0) continue;
    const auto [label, dashed] = capacity_label(header[c]);
    const std::string system = label.substr(0, label.find(','));
    auto it = std::find(systems.begin(), systems.end(), system);
    if (it == systems.end()) it = systems.insert(systems.end(), system);
    const int colour = int(it - systems.begin());
    j.lines.push_back({label, columns[0], columns[c], {}, {}, colour, dashed, false});
    if (c + 1 < header.size() && header[c + 1].rfind("sum", 0) == 0)
      sum.lines.push_back({label, columns[0], columns[c + 1], {}, {}, colour, dashed, false});
  }
  areas.push_back(fig.lines({0, 0.5, 0, 1}, j));
  areas.push_back(fig.lines({0.5, 1, 0, 1}, sum));
  fig.finish();
  return areas;
}

namespace {
// The slots first…last of a circular memory as ranges: "3–9", or for a window past the last slot,
// "111–119, 0–6"; a range of one slot is that slot alone.
std::string slot_ranges(std::int64_t first, std::int64_t last, std::int64_t slots) {
  auto range = [](std::int64_t a, std::int64_t b) { return a == b ? fmt::format("{}", a) : fmt::format("{}–{}", a, b); };
  if (first <= last || slots <= 0) return range(first, last);
  return range(first, slots - 1) + ", " + range(0, last);
}
}  // namespace

std::vector<PlotArea> inspect_sheet(const std::filesystem::path& out, const InspectData& d) {
  const std::int64_t T = std::int64_t(d.inputs.size());
  if (T == 0) throw Error("inspect: nothing to draw");
  // The slots drawn: those any weighting gives more than 2% at some step, with two on each side.
  std::int64_t slots = 0;
  for (const auto* ws : {&d.weightings, &d.slot_states})
    for (const auto& w : *ws)
      if (!w.w.empty()) slots = std::max<std::int64_t>(slots, std::int64_t(w.w[0].size()));
  // The memory is circular (heads shift modulo N): the window is the shortest circular run of slots holding
  // every slot some weighting gives more than 2% at some step, two more on each side, at least 12; `first`
  // may then exceed `last` (the window wraps past slot N−1 to 0) and rows are drawn as first, first+1, … mod N.
  std::int64_t first = d.first_slot, count = d.last_slot - d.first_slot + 1;
  if (slots > 0 && (first < 0 || d.last_slot < 0)) {
    std::vector<bool> used(std::size_t(slots), false);
    for (const auto* ws : {&d.weightings, &d.slot_states}) {
      if (ws == &d.slot_states && d.circular) break;
      for (const auto& w : *ws)
        for (const auto& row : w.w)
          for (std::int64_t s = 0; s < std::int64_t(row.size()) && s < slots; ++s)
            if (row[std::size_t(s)] > 0.02) used[std::size_t(s)] = true;
    }
    if (!d.circular) {  // a plain range: the used slots, two more on each side, at least 12, within 0…N−1
      const auto lo = std::find(used.begin(), used.end(), true);
      const auto hi = std::find(used.rbegin(), used.rend(), true);
      if (lo == used.end()) {
        first = 0, count = slots;
      } else {
        const std::int64_t a = lo - used.begin(), n = (used.rend() - hi) - a;
        const std::int64_t want = std::min(slots, n + 2 * (2 + std::max<std::int64_t>(0, (12 - n + 1) / 2)));
        first = std::clamp<std::int64_t>(a - (want - n) / 2, 0, slots - want), count = want;
      }
    } else {
      // The longest circular gap of unused slots; the window is its complement.
      std::int64_t best_gap = 0, gap_end = 0;
      for (std::int64_t start = 0; start < slots; ++start) {
        if (used[std::size_t(start)] || used[std::size_t((start + slots - 1) % slots)] == false) continue;
        std::int64_t n = 0;
        while (n < slots && !used[std::size_t((start + n) % slots)]) ++n;
        if (n > best_gap) best_gap = n, gap_end = start + n;
      }
      if (best_gap == 0 || best_gap == slots) first = 0, count = slots;
      else first = gap_end % slots, count = slots - best_gap;
      const std::int64_t pad = std::min<std::int64_t>(2 + std::max<std::int64_t>(0, (12 - count + 1) / 2), (slots - count) / 2);
      first = ((first - pad) % slots + slots) % slots;
      count = std::min(slots, count + 2 * pad);
    }
  }
  if (slots > 0) first = std::clamp<std::int64_t>(first, 0, slots - 1), count = std::clamp<std::int64_t>(count, 1, slots);
  const std::int64_t last = slots > 0 ? (first + count - 1) % slots : 0;

  // Layout in pixels: a column per time step for the frame rows, then the heatmaps.
  const bool memory = !d.memory.empty() && !d.weightings.empty();
  const int W = 1500, left = 140, right = 30;
  const double col = double(W - left - right) / double(T);
  const double frame_w = std::min(col * 0.86, 64.0);
  const Matrix& in0 = d.inputs[0];
  auto frame_h = [&](const Matrix& m) { return frame_w * double(m.rows) / double(std::max<std::int64_t>(1, m.cols)); };
  const double label_h = 26, line_h = 15;
  // Each number under the frames is given 12 pixels a digit and 10 more (a digit is about 8 at the page's largest
  // text). The input's step numbers go every 1, 2, 5, 10, … steps, the fewest that keep them apart; the memory's
  // slot numbers, one a written frame, take up to three lines in turn, and past that every k-th frame is numbered.
  auto label_width = [](std::int64_t largest) { return 12.0 * double(fmt::format("{}", largest).size()) + 10; };
  const std::int64_t step_stride =
      tick_step(T, std::max(1, int(double(W - left - right) / label_width(std::max<std::int64_t>(T - 1, 0)))));
  std::vector<std::pair<std::string, double>> rows = {{"input", frame_h(in0) + label_h}};
  if (!d.targets.empty()) {
    rows.push_back({"target", frame_h(d.targets[0]) + 8});
    rows.push_back({"output", frame_h(d.outputs[0]) + 8});
  }
  // Memory: at each step before the first target, the slot the first write head weighted most, after the write.
  std::vector<std::pair<std::int64_t, std::int64_t>> written;  // (time, slot)
  const InspectData::Weighting* write = nullptr;
  for (const auto& w : d.weightings)
    if (w.name.rfind("write", 0) == 0 && !write) write = &w;
  // The end of the input: the step the last run of consecutive target steps starts at (copy's first target;
  // keep_discard's first after its recall delimiter, past the discards' own copy-backs).
  std::int64_t input_end = d.target_steps.empty() ? T : d.target_steps.back();
  for (std::size_t k = d.target_steps.size(); k-- > 1 && d.target_steps[k - 1] + 1 == d.target_steps[k];)
    input_end = d.target_steps[k - 1];
  if (memory && write) {
    for (std::int64_t t = 0; t < input_end && t < std::int64_t(write->w.size()); ++t) {
      const auto& row = write->w[std::size_t(t)];
      written.push_back({t, std::int64_t(std::max_element(row.begin(), row.end()) - row.begin())});
    }
  }
  std::int64_t largest_slot = 0;
  for (const auto& ts : written) largest_slot = std::max(largest_slot, ts.second);
  const double slot_span = label_width(largest_slot) / col;  // the frames one slot number spans
  const std::int64_t slot_lines = std::clamp<std::int64_t>(std::int64_t(std::ceil(slot_span)), 1, 3);
  const std::int64_t slot_stride = std::max<std::int64_t>(1, std::int64_t(std::ceil(slot_span / double(slot_lines))));
  if (!written.empty()) rows.push_back({"memory", frame_h(d.memory[0][0]) + label_h + line_h * double(slot_lines - 1)});
  const bool heat = !d.weightings.empty() || !d.slot_states.empty();
  // A DNC's link matrices: at the end of the input (the step before the last run of targets) and at the last step.
  std::vector<std::int64_t> link_steps;
  if (!d.links.empty()) {
    const std::int64_t end = std::min<std::int64_t>(T, std::int64_t(d.links.size())) - 1;
    if (!d.target_steps.empty() && input_end >= 1 && input_end - 1 < end) link_steps.push_back(input_end - 1);
    link_steps.push_back(end);
  }
  // Below the frames, rows of heatmaps: a DNC's (usage, allocation, weightings, links) three to a row, a
  // MatNTM's weightings up to four (Graves' priority sort's 5 + 5 heads: three rows).
  const bool dnc = !link_steps.empty() || !d.slot_states.empty();
  const std::size_t panels = d.slot_states.size() + d.weightings.size() + link_steps.size();
  const std::size_t columns = dnc ? 3 : std::clamp<std::size_t>(panels, 1, 4);
  const std::size_t panel_rows = heat ? (panels + columns - 1) / columns : 0;
  const double title_h = 56, heat_h = heat ? (dnc ? 430 : 470) : 0, row_gap = 24, note_h = heat ? 0 : 40;
  double H = title_h + double(panel_rows) * heat_h + double(panel_rows > 1 ? panel_rows - 1 : 0) * row_gap + note_h + 20;
  for (const auto& r : rows) H += r.second + 14;
  const int height = int(std::ceil(H));
  Figure fig(out, W, height);
  // PLplot's text grows with the page's height: a sheet of several rows of panels keeps the text of a
  // one-row MatNTM's (about 940 pixels high), which leaves its narrower panels room.
  if ((dnc || panel_rows > 1) && height > 940) fig.scale_text(940.0 / double(height));
  auto nx = [&](double px) { return px / W; };
  auto ny = [&](double px_from_top) { return 1.0 - px_from_top / double(height); };
  fig.text(0.5, ny(34), d.title, 0.95, 0.5);
  double y = title_h;
  auto frame = [&](const Matrix& m, std::int64_t t, double top, const std::string& label, double lo, double hi,
                   std::int64_t line = 0) {
    const double x0 = left + col * double(t) + (col - frame_w) / 2;
    Heatmap h;
    h.rows = m.rows, h.cols = m.cols, h.values = m.values, h.v_min = lo, h.v_max = hi, h.axes = false;
    fig.heatmap({nx(x0), nx(x0 + frame_w), ny(top + frame_h(m)), ny(top)}, h);
    if (!label.empty())
      fig.text(nx(x0 + frame_w / 2), ny(top + frame_h(m) + 18 + line_h * double(line)), label, 0.75, 0.5);
  };
  for (const auto& [name, h] : rows) {
    // A row with numbers under its frames: the name beside the frames, apart from the numbers' "slot:".
    fig.text(nx(12), ny(y + (name == "memory" ? frame_h(d.memory[0][0]) / 2 : h / 2) + 5), name, 0.85, 0.0);
    if (name == "memory") fig.text(nx(12), ny(y + frame_h(d.memory[0][0]) + 18), "slot:", 0.75, 0.0);
    if (name == "input")
      for (std::int64_t t = 0; t < T; ++t)
        frame(d.inputs[std::size_t(t)], t, y, t % step_stride == 0 ? fmt::format("{}", t) : "", 0, 1);
    if (name == "target")
      for (std::size_t k = 0; k < d.targets.size(); ++k) frame(d.targets[k], d.target_steps[k], y, "", 0, 1);
    if (name == "output")
      for (std::size_t k = 0; k < d.outputs.size(); ++k) frame(d.outputs[k], d.target_steps[k], y, "", 0, 1);
    if (name == "memory") {
      double lo = INFINITY, hi = -INFINITY;
      for (auto [t, s] : written)
        for (double v : d.memory[std::size_t(t)][std::size_t(s)].values) lo = std::min(lo, v), hi = std::max(hi, v);
      for (std::size_t k = 0; k < written.size(); ++k) {
        const auto [t, s] = written[k];
        const auto n = std::int64_t(k);
        frame(d.memory[std::size_t(t)][std::size_t(s)], t, y, n % slot_stride == 0 ? fmt::format("{}", s) : "", lo, hi,
              (n / slot_stride) % slot_lines);
      }
    }
    y += h + 14;
  }
  std::vector<PlotArea> areas;
  if (!heat) {
    fig.text(nx(12), ny(y + 24), "This model exposes no memory or weightings: only its input, target and output are drawn.",
             0.9, 0.0);
    fig.finish();
    return areas;
  }
  // The heatmaps: slots × time for the slot states (a DNC's usage and allocation) and the weightings, then a
  // DNC's link matrices, `columns` to a row.
  std::vector<Heatmap> maps;
  for (std::size_t k = 0; k < d.slot_states.size() + d.weightings.size(); ++k) {
    const bool state = k < d.slot_states.size();
    const auto& wt = state ? d.slot_states[k] : d.weightings[k - d.slot_states.size()];
    Heatmap h;
    h.rows = count;
    h.cols = T;
    h.values.resize(std::size_t(h.rows * h.cols));
    for (std::int64_t r = 0; r < count; ++r)
      for (std::int64_t t = 0; t < T && t < std::int64_t(wt.w.size()); ++t)
        h.values[std::size_t(r * T + t)] = wt.w[std::size_t(t)][std::size_t(window_slot(first, r, slots))];
    h.v_min = 0, h.v_max = 1;
    // Rows are numbered with their slots, a wrapped window's going on from N−1 to 0 (window_slot).
    h.y_first = double(first);
    h.y_wrap = slots;
    std::string head = wt.name.substr(0, wt.name.find('/'));
    if (head.rfind("read", 0) == 0) head = "read head " + head.substr(4);
    else if (head.rfind("write", 0) == 0) head = "write head " + head.substr(5);
    h.title = state ? fmt::format("{} (slots {} of {})", wt.name, slot_ranges(first, last, slots), slots)
                    : fmt::format("{} weighting (slots {} of {})", head, slot_ranges(first, last, slots), slots);  // the tests look for this
    h.x_label = "time step";
    h.x_ticks = columns > 3 ? 4 : columns == 3 ? 5 : 10;  // on a third or a quarter of the width: fewer, apart
    h.y_label = "memory slot";
    h.colour_bar = true;
    maps.push_back(std::move(h));
  }
  // The link matrix on the window of slots both ways (all slots if the window wraps).
  const std::int64_t N = d.links.empty() ? 0 : d.links[0].rows;
  const bool window = !d.circular && slots == N;
  const std::int64_t lf = window ? first : 0, ln = window ? count : N;
  for (const std::int64_t t : link_steps) {
    const Matrix& L = d.links[std::size_t(t)];
    if (L.rows != N || L.cols != N || std::int64_t(L.values.size()) != N * N) continue;
    Heatmap h;
    h.rows = h.cols = ln;
    for (std::int64_t i = 0; i < ln; ++i)
      for (std::int64_t j = 0; j < ln; ++j) h.values.push_back(L.values[std::size_t((lf + i) * L.cols + lf + j)]);
    h.v_min = 0, h.v_max = 1;
    h.x_first = h.y_first = double(lf);
    h.title = fmt::format("link matrix L at step {} ({})", t, t + 1 == T ? "the last step" : "end of the input");
    h.x_label = "slot j";
    h.x_ticks = 5;  // two-digit slot numbers on a narrow axis
    h.y_label = "slot i, written after j";
    h.colour_bar = true;
    maps.push_back(std::move(h));
  }
  const double w = double(W - 20) / double(columns);
  for (std::size_t k = 0; k < maps.size(); ++k) {
    const double x = 10 + w * double(k % columns), top = y + double(k / columns) * (heat_h + row_gap);
    areas.push_back(fig.heatmap({nx(x), nx(x + w), ny(top + heat_h), ny(top)}, maps[k]));
  }
  fig.finish();
  return areas;
}

}  // namespace matmem::tools::plot
