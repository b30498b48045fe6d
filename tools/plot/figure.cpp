#include "matmem/tools/plot/figure.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include <fmt/format.h>
#include <plplot/plplot.h>

#include "matmem/runtime/error.hpp"

#ifndef MATMEM_PLPLOT_DRIVER_DIR
#define MATMEM_PLPLOT_DRIVER_DIR "/usr/lib/x86_64-linux-gnu/plplot5.15.0/drivers"
#endif

namespace matmem::tools::plot {
namespace {
// PLplot's first refusal of a drawing call since the figure was opened (plabort: a viewport with no room, say),
// which it would otherwise print and go on from, leaving a picture with parts missing; Figure::finish throws it.
thread_local std::string plplot_refusal;
void record_refusal(PLCHAR_VECTOR message) {
  if (plplot_refusal.empty()) plplot_refusal = message ? message : "no message";
}

// cmap0 entries: 0 background, 1 axes and text, 2 grid, 3..10 line colours, 11..18 the same translucent.
constexpr int kInk = 1, kGrid = 2, kLine = 3, kBand = 11, kPalette = 8;

constexpr std::array<Rgb, kPalette> kOkabeIto = {{{0, 114, 178},    // blue
                                                  {213, 94, 0},     // vermillion
                                                  {0, 158, 115},    // bluish green
                                                  {204, 121, 167},  // reddish purple
                                                  {230, 159, 0},    // orange
                                                  {86, 180, 233},   // sky blue
                                                  {0, 0, 0},        // black
                                                  {160, 140, 0}}};  // dark yellow (Okabe-Ito's yellow, darkened)

// Viridis (matplotlib's, by van der Walt and Smith) at nine control points.
constexpr std::array<Rgb, 9> kViridis = {{{68, 1, 84},
                                          {71, 45, 123},
                                          {59, 82, 139},
                                          {44, 114, 142},
                                          {33, 145, 140},
                                          {40, 174, 128},
                                          {94, 201, 98},
                                          {173, 220, 48},
                                          {253, 231, 37}}};

struct Device {
  const char* name;     // PLplot's device
  const char* driver;   // the driver module it lives in
  const char* package;  // the Debian package that ships the module
};

Device device_for(Format f) {
  return f == Format::png ? Device{"pngcairo", "cairo", "plplot-driver-cairo"} : Device{"svg", "svg", "libplplot17"};
}

std::string driver_dir() {
  const char* env = std::getenv("PLPLOT_DRV_DIR");
  return env && *env ? env : MATMEM_PLPLOT_DRIVER_DIR;
}

// PLplot ends the program (plexit) when a device is missing, so the device is looked for first.
void require_device(const Device& d) {
  static const char* menus[128];
  static const char* names[128];
  const char** menu = menus;
  const char** name = names;
  int n = 128;
  plgDevs(&menu, &name, &n);
  bool listed = false;
  for (int k = 0; k < n; ++k) listed = listed || std::strcmp(name[k], d.name) == 0;
  const std::string dir = driver_dir();
  const std::filesystem::path module = std::filesystem::path(dir) / (std::string(d.driver) + ".so");
  if (!listed || !std::filesystem::exists(module))
    throw Error(fmt::format("PLplot has no {} device ({} missing): install Debian's package {} (PLplot loads its "
                            "drivers from {} at run time)",
                            d.name, listed ? module.string() : std::string(d.driver) + ".driver_info", d.package, dir));
}

// PLplot reads '#' as its escape character; a label's own '#' is doubled.
std::string escaped(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    out += c;
    if (c == '#') out += '#';
  }
  return out;
}

bool finite(double v) { return std::isfinite(v); }

// The value drawn on an axis: log10 on a log axis (NaN for values ≤ 0, left out).
double axis_value(double v, bool log) {
  if (!log) return v;
  return v > 0 ? std::log10(v) : NAN;
}

// A range with a margin on each side; a flat range is widened so that it still shows.
void padded(double& lo, double& hi, double margin) {
  if (!(lo < hi)) {
    const double w = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= w;
    hi += w;
    return;
  }
  const double w = (hi - lo) * margin;
  lo -= w;
  hi += w;
}

// Runs of consecutive indices where ok(k) holds.
template <class Ok>
std::vector<std::pair<std::size_t, std::size_t>> runs_where(std::size_t n, Ok ok) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t k = 0;
  while (k < n) {
    while (k < n && !ok(k)) ++k;
    const std::size_t first = k;
    while (k < n && ok(k)) ++k;
    if (k > first) out.push_back({first, k});
  }
  return out;
}

// A circular axis for slot_label: row r is slot (first + r) mod slots.
struct WrapAxis {
  std::int64_t first, slots;
};

}  // namespace

Format format_of(const std::filesystem::path& path, const std::string& option) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (ext == ".png") return Format::png;
  if (ext == ".svg") return Format::svg;
  throw Error(fmt::format("{} {}: the picture's format comes from its extension, .png or .svg{}", option,
                          path.string(), ext.empty() ? " (it has none)" : fmt::format(" ({} is neither)", ext)));
}

std::int64_t window_slot(std::int64_t first, std::int64_t r, std::int64_t slots) {
  if (slots <= 0) return first + r;
  const std::int64_t s = (first + r) % slots;
  return s < 0 ? s + slots : s;
}

namespace {
// PLplot's label function for a circular axis (plslabelfunc): the slot at the tick's unwrapped value.
void slot_label(PLINT, PLFLT value, char* label, PLINT length, PLPointer data) {
  const WrapAxis* w = static_cast<const WrapAxis*>(data);
  const std::int64_t at = std::llround(value);
  std::snprintf(label, std::size_t(length), "%lld", static_cast<long long>(window_slot(w->first, at - w->first, w->slots)));
}

// A linear axis numbered by matmem rather than PLplot, which would move a common factor of the numbers into a
// separate "(x10^k)" note beside the axis: ticks every `step` (1, 2 or 5 × 10^k, giving at most six intervals
// over the window), each written in full with the decimals the step needs.
struct Numbering {
  double step = 1;
  int decimals = 0;     // fixed notation with this many decimals
  int significant = 0;  // > 0: %g with this many significant digits instead (very large or very fine numbers)
};

Numbering numbering(double lo, double hi) {
  Numbering n;
  const double span = std::abs(hi - lo);
  if (!(span > 0) || !finite(span)) return n;
  n.step = 0;
  for (double decade = std::pow(10.0, std::floor(std::log10(span / 6))); n.step == 0; decade *= 10)
    for (double m : {1.0, 2.0, 5.0})
      if (n.step == 0 && span / (m * decade) <= 6.0 * (1 + 1e-9)) n.step = m * decade;
  const int step_exp = int(std::floor(std::log10(n.step) + 1e-9));
  const double most = std::max(std::abs(lo), std::abs(hi));
  if (step_exp < -5 || most >= 1e7)
    n.significant = std::max(1, int(std::floor(std::log10(most) + 1e-9)) - step_exp + 1);
  else
    n.decimals = std::max(0, -step_exp);
  return n;
}

std::string number_text(double value, const Numbering& n) {
  value = std::round(value / n.step) * n.step;  // a tick's value, without the rounding error of its sum
  if (std::abs(value) < n.step * 1e-6) value = 0;  // never "-0.00"
  return n.significant > 0 ? fmt::format("{:.{}g}", value, n.significant) : fmt::format("{:.{}f}", value, n.decimals);
}

// The longest number of the ticks of [lo, hi], in characters.
std::size_t widest_number(double lo, double hi, const Numbering& n) {
  std::size_t most = 0;
  const double a = std::min(lo, hi), b = std::max(lo, hi);
  for (double k = std::ceil(a / n.step - 1e-9); k * n.step <= b + n.step * 1e-9; k += 1)
    most = std::max(most, number_text(k * n.step, n).size());
  return most;
}

// The last number along an axis, the one at the right end of an x axis.
std::string last_number(double lo, double hi, const Numbering& n) {
  return number_text(std::floor(std::max(lo, hi) / n.step + 1e-9) * n.step, n);
}

// PLplot's label function for the numbered linear axes (plslabelfunc); data: Numbering[2], x then y.
void number_label(PLINT axis, PLFLT value, char* label, PLINT length, PLPointer data) {
  const Numbering* n = static_cast<const Numbering*>(data);
  std::snprintf(label, std::size_t(length), "%s", number_text(value, n[axis == PL_Y_AXIS ? 1 : 0]).c_str());
}

// The width of a string of digits, signs and points in character heights (DejaVu Sans, the cairo and svg
// devices' sans-serif: a digit is 0.64 em, and the em 1.3 of PLplot's character height), and the width of
// ordinary text, a little narrower on average.
constexpr double kDigitWidth = 0.83, kTextWidth = 0.75;

// The characters of UTF-8 text (its code points), at least 1.
double characters(const std::string& s) {
  double n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return std::max(n, 1.0);
}

}  // namespace

std::int64_t tick_step(std::int64_t count, int most) {
  most = std::max(most, 1);
  for (std::int64_t decade = 1;; decade *= 10)
    for (std::int64_t m : {1, 2, 5})
      if ((count + m * decade - 1) / (m * decade) <= most) return m * decade;  // at most ⌈count/step⌉ multiples
}

std::vector<Tick> window_ticks(std::int64_t first, std::int64_t count, std::int64_t slots) {
  const std::int64_t step = tick_step(count);
  std::vector<Tick> out;
  for (std::int64_t r = 0; r < count; ++r)
    if ((first + r) % step == 0) out.push_back({r, window_slot(first, r, slots)});
  return out;
}

Rgb line_colour(int k) { return kOkabeIto[std::size_t(((k % kPalette) + kPalette) % kPalette)]; }

Rgb colour_map(double t) {
  t = std::clamp(std::isnan(t) ? 0.0 : t, 0.0, 1.0) * double(kViridis.size() - 1);
  const std::size_t i = std::min<std::size_t>(std::size_t(t), kViridis.size() - 2);
  const double f = t - double(i);
  const Rgb a = kViridis[i], b = kViridis[i + 1];
  auto mix = [f](int x, int y) { return int(std::lround(x + (y - x) * f)); };
  return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

Figure::Figure(std::filesystem::path path, int width, int height)
    : path_(std::move(path)), width_(width), height_(height) {
  const Device d = device_for(format_of(path_));
  if (width < 16 || height < 16 || width > 20000 || height > 20000)
    throw Error(fmt::format("{}: a picture of {}x{} pixels (16 to 20000 each way)", path_.string(), width, height));
  require_device(d);
  {  // PLplot ends the program when it cannot open its file, so the file is opened here first
    std::ofstream probe(path_, std::ios::binary | std::ios::trunc);
    if (!probe) throw Error(fmt::format("cannot write {}: {}", path_.string(), std::strerror(errno)));
  }
  plplot_refusal.clear();
  plsabort(record_refusal);
  PLINT stream = 0;
  plmkstrm(&stream);
  stream_ = stream;
  plsdev(d.name);
  plsfnam(path_.string().c_str());
  plspage(0, 0, width, height, 0, 0);
  plscmap0n(kBand + kPalette);
  plscol0(0, 255, 255, 255);
  plscol0(kInk, 0, 0, 0);
  plscol0(kGrid, 215, 215, 215);
  for (int k = 0; k < kPalette; ++k) {
    const Rgb c = kOkabeIto[std::size_t(k)];
    plscol0(kLine + k, c.r, c.g, c.b);
    plscol0a(kBand + k, c.r, c.g, c.b, 0.22);
  }
  std::array<PLFLT, kViridis.size()> pos, r, g, b;
  for (std::size_t k = 0; k < kViridis.size(); ++k) {
    pos[k] = double(k) / double(kViridis.size() - 1);
    r[k] = kViridis[k].r / 255.0;
    g[k] = kViridis[k].g / 255.0;
    b[k] = kViridis[k].b / 255.0;
  }
  plscmap1n(256);
  plscmap1l(1, PLINT(pos.size()), pos.data(), r.data(), g.data(), b.data(), nullptr);
  plinit();
  open_ = true;
  pladv(0);
  // Text grows with the shorter side (PLplot's default height reads well at 600 pixels).
  text_scale_ = std::clamp(std::min(width, height) / 650.0, 0.8, 1.0);
  plschr(0.0, text_scale_);
  plcol0(kInk);
}

Figure::~Figure() {
  if (open_) {
    select();
    plend1();
  }
}

void Figure::select() const { plsstrm(stream_); }

std::pair<double, double> Figure::char_size() const {
  PLFLT def = 0, ht = 0, x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  plgchr(&def, &ht);  // mm
  plgspa(&x0, &x1, &y0, &y1);  // the page, mm
  return {ht / (x1 - x0), ht / (y1 - y0)};
}

void Figure::finish() {
  if (!open_) return;
  select();
  plend1();
  open_ = false;
  if (!plplot_refusal.empty()) {
    const std::string why = std::exchange(plplot_refusal, {});
    throw Error(fmt::format("PLplot could not draw all of {}: {}", path_.string(), why));
  }
  std::error_code ec;
  if (std::filesystem::file_size(path_, ec) == 0 || ec)
    throw Error(fmt::format("PLplot wrote nothing to {}", path_.string()));
}

void Figure::scale_text(double factor) {
  select();
  text_scale_ *= factor;
  plschr(0, text_scale_);
}

void Figure::text(double x, double y, const std::string& s, double size, double just) {
  select();
  PLFLT def = 0, ht = 0;
  plgchr(&def, &ht);
  plvpor(0, 1, 0, 1);
  plwind(0, 1, 0, 1);
  plschr(0, size * text_scale_);
  plcol0(kInk);
  plptex(x, y, 1, 0, just, escaped(s).c_str());
  plschr(0, text_scale_);
}

PlotArea Figure::lines(Box box, const LinePlot& p) {
  select();
  PLFLT def = 0, ht = 0;
  plgchr(&def, &ht);
  const auto [cw, ch] = char_size();
  std::size_t entries = 0;
  for (const Line& l : p.lines) entries += l.label.empty() ? 0 : 1;
  const bool above = p.legend && entries && p.legend_at == LinePlot::LegendAt::above;
  const double legend_h = above ? 1.75 * double(entries) + 2.3 : 0.0;
  // World window from the data, on the axes' scales.
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Line& l : p.lines)
    for (std::size_t k = 0; k < l.x.size(); ++k) {
      const double x = axis_value(l.x[k], p.log_x);
      if (!finite(x)) continue;
      for (double v : {l.y[k], l.lo.empty() ? NAN : l.lo[k], l.hi.empty() ? NAN : l.hi[k]}) {
        const double y = axis_value(v, p.log_y);
        if (!finite(y)) continue;
        x0 = std::min(x0, x), x1 = std::max(x1, x);
        y0 = std::min(y0, y), y1 = std::max(y1, y);
      }
    }
  if (!finite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // nothing to draw: empty axes
  if (!(x0 < x1)) padded(x0, x1, 0.0);
  padded(y0, y1, 0.05);
  if (p.log_y) {  // whole decades, so that a log axis always has numbered ticks
    y0 = std::floor(y0 + 0.02);
    y1 = std::ceil(y1 - 0.02);
    if (!(y0 < y1)) y1 = y0 + 1;
  }
  if (!std::isnan(p.y_min)) y0 = axis_value(p.y_min, p.log_y);
  if (!std::isnan(p.y_max)) y1 = axis_value(p.y_max, p.log_y);
  // Margins in characters: numbers and label left, numbers and label below, title (and legend) above, and
  // on the right half the last x number, which is centred on the plot's right edge.
  const std::array<Numbering, 2> numbers = {numbering(x0, x1), numbering(y0, y1)};
  const double y_numbers = p.log_y ? 3.0 : kDigitWidth * double(widest_number(y0, y1, numbers[1]));
  const double last_x = p.log_x ? 2.0 : kDigitWidth * double(last_number(x0, x1, numbers[0]).size());
  const double label_at = std::max(5.2, y_numbers + 2.3);  // plmtex's distance of the y label from the axis
  const double bottom = 4.2, top = (p.title.empty() ? 1.2 : 2.6) + legend_h;
  plvpor(box.x0 + (label_at + 2.3) * cw, box.x1 - std::max(1.5, last_x / 2 + 1.5) * cw, box.y0 + bottom * ch,
         box.y1 - top * ch);
  plwind(x0, x1, y0, y1);
  const std::string xo = std::string(p.log_x ? "l" : "");
  const std::string yo = std::string(p.log_y ? "l" : "");
  // Grid first, light, under everything; then bands, lines, axes and the legend on top.
  plcol0(kGrid);
  plwidth(1.0);
  plbox(("g" + xo).c_str(), p.log_x ? 0 : numbers[0].step, 0, ("g" + yo).c_str(), p.log_y ? 0 : numbers[1].step, 0);
  for (const Line& l : p.lines) {
    if (l.lo.empty() || l.hi.empty()) continue;
    plcol0(kBand + ((l.colour % kPalette) + kPalette) % kPalette);
    std::vector<double> xs(l.x.size()), lo(l.x.size()), hi(l.x.size());
    for (std::size_t k = 0; k < l.x.size(); ++k) {
      xs[k] = axis_value(l.x[k], p.log_x);
      lo[k] = axis_value(p.log_y ? std::max(l.lo[k], 1e-300) : l.lo[k], p.log_y);
      hi[k] = axis_value(l.hi[k], p.log_y);
    }
    for (auto [a, b] : runs_where(xs.size(), [&](std::size_t k) { return finite(xs[k]) && finite(lo[k]) && finite(hi[k]); })) {
      if (b - a < 2) continue;
      std::vector<PLFLT> px, py;
      for (std::size_t k = a; k < b; ++k) px.push_back(xs[k]), py.push_back(hi[k]);
      for (std::size_t k = b; k-- > a;) px.push_back(xs[k]), py.push_back(lo[k]);
      plfill(PLINT(px.size()), px.data(), py.data());
    }
  }
  for (const Line& l : p.lines) {
    plcol0(kLine + ((l.colour % kPalette) + kPalette) % kPalette);
    plwidth(2.0);
    pllsty(l.dashed ? 3 : 1);
    std::vector<double> xs(l.x.size()), ys(l.x.size());
    for (std::size_t k = 0; k < l.x.size(); ++k) xs[k] = axis_value(l.x[k], p.log_x), ys[k] = axis_value(l.y[k], p.log_y);
    for (auto [a, b] : runs_where(xs.size(), [&](std::size_t k) { return finite(xs[k]) && finite(ys[k]); })) {
      if (b - a >= 2) plline(PLINT(b - a), xs.data() + a, ys.data() + a);
      if (l.markers || b - a == 1) plpoin(PLINT(b - a), xs.data() + a, ys.data() + a, 17);
    }
  }
  pllsty(1);
  plwidth(1.0);
  plcol0(kInk);
  // A linear axis is numbered by number_label, every step of its Numbering; a log axis by PLplot (10^k).
  plslabelfunc(number_label, const_cast<Numbering*>(numbers.data()));
  plbox(("bcnst" + (p.log_x ? xo : "o")).c_str(), p.log_x ? 0 : numbers[0].step, 0,
        ("bcnstv" + (p.log_y ? yo : "o")).c_str(), p.log_y ? 0 : numbers[1].step, 0);
  plslabelfunc(nullptr, nullptr);
  plmtex("b", 3.0, 0.5, 0.5, escaped(p.x_label).c_str());
  {  // a y label longer than the plot is tall is written smaller, to fit
    PLFLT vx0, vx1, vy0, vy1;
    plgvpd(&vx0, &vx1, &vy0, &vy1);
    const double room = (vy1 - vy0) / ch, length = kTextWidth * characters(p.y_label);
    const double size = std::clamp(0.97 * room / std::max(length, 1.0), 0.5, 1.0);
    plschr(0, size * text_scale_);
    plmtex("l", label_at / size, 0.5, 0.5, escaped(p.y_label).c_str());
    plschr(0, text_scale_);
  }
  if (!p.title.empty()) plmtex("t", 0.9 + legend_h, 0.5, 0.5, escaped(p.title).c_str());
  std::vector<std::string> texts;
  std::vector<PLINT> opts, colours, styles, text_colours;
  std::vector<PLFLT> widths;
  for (const Line& l : p.lines) {
    if (l.label.empty()) continue;
    texts.push_back(escaped(l.label));
    opts.push_back(PL_LEGEND_LINE);
    colours.push_back(kLine + ((l.colour % kPalette) + kPalette) % kPalette);
    styles.push_back(l.dashed ? 3 : 1);
    widths.push_back(2.0);
    text_colours.push_back(kInk);
  }
  if (p.legend && !texts.empty()) {
    std::vector<const char*> ctexts;
    for (const std::string& t : texts) ctexts.push_back(t.c_str());
    PLINT position = PL_POSITION_INSIDE | PL_POSITION_VIEWPORT;
    LinePlot::LegendAt at = p.legend_at;
    if (at == LinePlot::LegendAt::best) {  // count the points (and band edges) in each quarter of the window
      int count[4] = {0, 0, 0, 0};        // top right, bottom right, top left, bottom left
      for (const Line& l : p.lines)
        for (std::size_t k = 0; k < l.x.size(); ++k)
          for (double v : {l.y[k], l.lo.empty() ? NAN : l.lo[k], l.hi.empty() ? NAN : l.hi[k]}) {
            const double x = axis_value(l.x[k], p.log_x), y = axis_value(v, p.log_y);
            if (!finite(x) || !finite(y)) continue;
            const bool right = (x - x0) / (x1 - x0) > 0.5, top = (y - y0) / (y1 - y0) > 0.55;
            const bool bottom = (y - y0) / (y1 - y0) < 0.45;
            if (right && top) ++count[0];
            if (right && bottom) ++count[1];
            if (!right && top) ++count[2];
            if (!right && bottom) ++count[3];
          }
      const int best = int(std::min_element(count, count + 4) - count);  // ties: top right first
      at = std::array{LinePlot::LegendAt::top_right, LinePlot::LegendAt::bottom_right, LinePlot::LegendAt::top_left,
                      LinePlot::LegendAt::bottom_left}[std::size_t(best)];
    }
    double offset_y = 0.03;
    if (above) {  // clear of the top y number, which stands half a line (a log axis's exponent a line) above
      PLFLT vx0, vx1, vy0, vy1;
      plgvpd(&vx0, &vx1, &vy0, &vy1);
      position = PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT | PL_POSITION_TOP;
      offset_y = 1.3 * ch / (vy1 - vy0);
    }
    switch (at) {
      case LinePlot::LegendAt::above: break;
      case LinePlot::LegendAt::best:
      case LinePlot::LegendAt::top_right: position |= PL_POSITION_TOP | PL_POSITION_RIGHT; break;
      case LinePlot::LegendAt::bottom_right: position |= PL_POSITION_BOTTOM | PL_POSITION_RIGHT; break;
      case LinePlot::LegendAt::top_left: position |= PL_POSITION_TOP | PL_POSITION_LEFT; break;
      case LinePlot::LegendAt::bottom_left: position |= PL_POSITION_BOTTOM | PL_POSITION_LEFT; break;
    }
    PLFLT w = 0, h = 0;  // pllegend's text scale is relative to PLplot's default height, not the current one
    pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX, position, above ? 0.0 : 0.02, offset_y, 0.06, 0, kInk, 1, 0, 0,
             PLINT(texts.size()), opts.data(), 0.8, 0.85 * text_scale_, 2.0, 0.0, text_colours.data(), ctexts.data(), nullptr,
             nullptr, nullptr, nullptr, colours.data(), styles.data(), widths.data(), nullptr, nullptr, nullptr,
             nullptr);
    plschr(0, text_scale_);
  }
  PLFLT vx0, vx1, vy0, vy1;
  plgvpd(&vx0, &vx1, &vy0, &vy1);
  return {vx0 * width_, vx1 * width_, (1 - vy1) * height_, (1 - vy0) * height_, x0, x1, y0, y1};
}

PlotArea Figure::heatmap(Box box, const Heatmap& m) {
  select();
  if (m.rows < 1 || m.cols < 1 || std::int64_t(m.values.size()) != m.rows * m.cols)
    throw Error(fmt::format("heatmap {}: {} values for {}x{}", m.title, m.values.size(), m.rows, m.cols));
  PLFLT def = 0, ht = 0;
  plgchr(&def, &ht);
  const auto [cw, ch] = char_size();
  const double left = m.axes ? 5.5 : (m.y_label.empty() ? 0.0 : 1.6),
               bottom = m.axes ? (m.x_label.empty() ? 2.2 : 4.2) : (m.x_label.empty() ? 0.0 : 1.6),
               top = m.title.empty() ? (m.axes ? 0.6 : 0.0) : (m.axes ? 2.5 : 1.8), right = m.colour_bar ? 6.0 : (m.axes ? 0.8 : 0.0);
  plvpor(box.x0 + left * cw, box.x1 - right * cw, box.y0 + bottom * ch, box.y1 - top * ch);
  double lo = m.v_min, hi = m.v_max;
  if (std::isnan(lo) || std::isnan(hi)) {
    double dlo = INFINITY, dhi = -INFINITY;
    for (double v : m.values)
      if (finite(v)) dlo = std::min(dlo, v), dhi = std::max(dhi, v);
    if (!finite(dlo)) dlo = 0, dhi = 1;
    if (std::isnan(lo)) lo = dlo;
    if (std::isnan(hi)) hi = dhi;
  }
  if (!(lo < hi)) hi = lo + 1;
  // World: column c spans [x_first + c − ½, x_first + c + ½]; row r likewise, drawn downwards (row 0 on top).
  const double x0 = m.x_first - 0.5, x1 = m.x_first + double(m.cols) - 0.5;
  const double y0 = m.y_first - 0.5, y1 = m.y_first + double(m.rows) - 0.5;
  plwind(x0, x1, y1, y0);
  std::vector<PLFLT> cells(std::size_t(m.rows * m.cols));
  std::vector<const PLFLT*> columns(std::size_t(m.cols));
  for (std::int64_t c = 0; c < m.cols; ++c) {
    for (std::int64_t r = 0; r < m.rows; ++r) {
      const double v = m.values[std::size_t(r * m.cols + c)];
      cells[std::size_t(c * m.rows + r)] = finite(v) ? std::clamp(v, lo, hi) : lo;
    }
    columns[std::size_t(c)] = cells.data() + c * m.rows;
  }
  // plimagefr places cell (i, j) between the transformed corners (i, j) and (i + 1, j + 1); without a
  // transformation it would stretch the corners of the nx × ny values over the window (one cell short).
  struct Cells {
    double x0, dx, y0, dy;
  } grid{x0, (x1 - x0) / double(m.cols), y0, (y1 - y0) / double(m.rows)};
  auto corner = [](PLFLT i, PLFLT j, PLFLT* x, PLFLT* y, PLPointer data) {
    const Cells* g = static_cast<const Cells*>(data);
    *x = g->x0 + i * g->dx;
    *y = g->y0 + j * g->dy;
  };
  plimagefr(columns.data(), PLINT(m.cols), PLINT(m.rows), x0, x1, y0, y1, lo, hi, lo, hi, corner, &grid);
  plcol0(kInk);
  plwidth(1.0);
  if (m.axes) {
    // Whole cells are numbered (never 2.5), and a circular window by its slots: PLplot puts a tick at every
    // multiple of the step of y_first + r and asks slot_label for its number.
    WrapAxis wrap{std::llround(m.y_first), m.y_wrap};
    if (m.y_wrap > 0) plslabelfunc(slot_label, &wrap);
    const std::int64_t x_step = tick_step(m.cols, m.x_ticks), y_step = tick_step(m.rows);  // minor ticks: whole cells
    plbox("bcnst", double(x_step), PLINT(std::min<std::int64_t>(x_step, 5)), m.y_wrap > 0 ? "bcnstvo" : "bcnstv",
          double(y_step), PLINT(std::min<std::int64_t>(y_step, 5)));
    plslabelfunc(nullptr, nullptr);
  } else {
    plbox("bc", 0, 0, "bc", 0, 0);
  }
  if (!m.x_label.empty()) plmtex("b", m.axes ? 3.0 : 1.2, 0.5, 0.5, escaped(m.x_label).c_str());
  if (!m.y_label.empty()) plmtex("l", m.axes ? 4.2 : 0.8, 0.5, 0.5, escaped(m.y_label).c_str());
  // The title clears the top numbers of the y axis and of the colour bar, which stand half a line above the plot.
  // A title wider than its box (centred on the plot) is written smaller, to fit.
  if (!m.title.empty()) {
    PLFLT vx0, vx1, vy0, vy1;
    plgvpd(&vx0, &vx1, &vy0, &vy1);
    const double room = 2 * std::min((vx0 + vx1) / 2 - box.x0, box.x1 - (vx0 + vx1) / 2) / cw;
    const double size = std::clamp(0.97 * room / (kTextWidth * characters(m.title)), 0.5, 1.0);
    plschr(0, size * text_scale_);
    plmtex("t", (m.axes ? 1.3 : 0.6) / size, 0.5, 0.5, escaped(m.title).c_str());
    plschr(0, text_scale_);
  }
  if (m.colour_bar) {
    PLFLT w = 0, h = 0;
    const char* axis_opts[] = {"bcvtm"};
    const PLFLT ticks[] = {0.0};
    const PLINT sub_ticks[] = {0};
    const PLINT n_values[] = {2};
    const PLFLT range[] = {lo, hi};
    const PLFLT* values[] = {range};
    plschr(0, 0.8 * text_scale_);
    plsmaj(0, 0.5);  // the ticks point out at the numbers: at full length one reads as a minus sign
    plcolorbar(&w, &h, PL_COLORBAR_IMAGE, PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT, 0.015, 0.0,
               0.025, 1.0, 0, kInk, 1, 0, 0, 0, 0, 0, nullptr, nullptr, 1, axis_opts, ticks, sub_ticks, n_values,
               values);
    plsmaj(0, 1);
    plschr(0, text_scale_);
  }
  PLFLT vx0, vx1, vy0, vy1;
  plgvpd(&vx0, &vx1, &vy0, &vy1);
  return {vx0 * width_, vx1 * width_, (1 - vy1) * height_, (1 - vy0) * height_, x0, x1, y0, y1};
}

}  // namespace matmem::tools::plot
