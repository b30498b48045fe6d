// Pictures for the `matmem` command, drawn with PLplot (Debian's libplplot-dev and plplot-driver-cairo):
// line plots with bands and a legend, and heatmaps in a perceptual colour map. A Figure is one PNG or SVG
// file; the extension of its path chooses the format (.png: PLplot's pngcairo device; .svg: PLplot's own svg
// device, which keeps every label and legend entry as <text>, so the file is searchable and its words can be
// checked). This header includes nothing of PLplot's.
//
// Coordinates: a Figure's area is the unit square, (0,0) bottom left; a panel occupies a box in it, given as
// Box{x0, x1, y0, y1}. Text is UTF-8; '#' (PLplot's escape character) is drawn as itself.
#pragma once
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace matmem::tools::plot {

enum class Format { png, svg };
// The format a path asks for by its extension (case-insensitive); any other is refused, naming the option.
Format format_of(const std::filesystem::path& path, const std::string& option = "--out");

struct Box {
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
};

// One line of a LinePlot, optionally with a band (lo..hi, drawn translucent in the line's colour behind it).
struct Line {
  std::string label;            // legend entry; empty: none
  std::vector<double> x, y;     // NaN points are gaps
  std::vector<double> lo, hi;   // the band, same length as x, or empty
  int colour = 0;               // index into the palette (line_colour)
  bool dashed = false;
  bool markers = false;         // a symbol at every point
};

struct LinePlot {
  std::string title, x_label, y_label;
  std::vector<Line> lines;
  bool log_x = false, log_y = false;  // non-positive values are left out on a log axis
  bool legend = true;
  // best: the corner whose quarter of the plot holds the fewest data points; above: outside, over the plot,
  // hiding no data.
  enum class LegendAt { best, above, top_right, bottom_right, top_left, bottom_left } legend_at = LegendAt::best;
  double y_min = NAN, y_max = NAN;    // NaN: from the data (with a margin)
};

// A matrix drawn as an image: values[r * cols + c], row 0 at the top (as a matrix is printed).
struct Heatmap {
  std::string title, x_label, y_label;
  std::int64_t rows = 0, cols = 0;
  std::vector<double> values;
  double v_min = NAN, v_max = NAN;  // NaN: the data's range
  double x_first = 0, y_first = 0;  // the axis value of column 0 and of row 0 (e.g. a first slot index)
  // > 0: the rows are a window onto a circular memory of y_wrap slots, row r showing slot
  // (y_first + r) mod y_wrap (window_slot); the y axis is numbered with those slots, every tick_step(rows).
  std::int64_t y_wrap = 0;
  bool axes = true;                 // numbered axes; false: a plain frame (small matrix pictures)
  int x_ticks = 10;                 // the x axis numbers at most this many columns (tick_step)
  bool colour_bar = false;          // a bar at the right mapping colours to values
};

// A window of consecutive positions 0, 1, … onto a circular memory of `slots` slots (a ring: slot slots−1 is
// followed by slot 0), position 0 at slot `first`: the slot at position r, (first + r) mod slots.
std::int64_t window_slot(std::int64_t first, std::int64_t r, std::int64_t slots);
// The spacing of numbered ticks on an axis of `count` unit cells: the smallest of 1, 2, 5, 10, 20, 50, … that
// numbers at most `most` of them.
std::int64_t tick_step(std::int64_t count, int most = 10);
// The numbered positions of a window of `count` positions (window_slot): those whose unwrapped index
// first + r is a multiple of tick_step(count), each with the slot it shows; e.g. first 99, count 25 of 120
// slots: positions 1, 6, 11, 16, 21 showing slots 100, 105, 110, 115, 0.
struct Tick {
  std::int64_t position, slot;
  bool operator==(const Tick&) const = default;
};
std::vector<Tick> window_ticks(std::int64_t first, std::int64_t count, std::int64_t slots);

// The sRGB colour of palette entry k (cycled): eight line colours that stay apart for colour-blind readers
// (Okabe and Ito's set, black first).
struct Rgb {
  int r, g, b;
};
Rgb line_colour(int k);
// The heatmap colour map (viridis, from control points): t in [0,1] to sRGB. Its luminance rises with t, so
// a greyscale print still orders the values.
Rgb colour_map(double t);

// Where a panel's plot area landed on the page, in pixels from the top left (for tests and overlays), and
// the world window it shows (log10 of the values on a log axis).
struct PlotArea {
  double left = 0, right = 0, top = 0, bottom = 0;      // pixels
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;    // world
};

class Figure {
 public:
  // Opens `path` for a width × height pixel picture. Throws if the format is not .png/.svg, or PLplot lacks
  // the device (naming the Debian package that has it).
  Figure(std::filesystem::path path, int width, int height);
  ~Figure();  // finishes the file if finish() was not called (errors then go unreported)
  Figure(const Figure&) = delete;
  Figure& operator=(const Figure&) = delete;

  int width() const { return width_; }
  int height() const { return height_; }
  const std::filesystem::path& path() const { return path_; }

  PlotArea lines(Box box, const LinePlot& plot);
  PlotArea heatmap(Box box, const Heatmap& map);
  // Text at (x, y) of the page; just: 0 left, 0.5 centred, 1 right aligned; size: relative to the default.
  void text(double x, double y, const std::string& text, double size = 1.0, double just = 0.0);
  // All text from here on `factor` times its size: PLplot's text grows with the page's height, so a tall page
  // whose text should be as large as a lower one's scales it by their heights' ratio.
  void scale_text(double factor);
  // Writes and closes the file; throws if it was not written.
  void finish();

 private:
  void select() const;
  std::pair<double, double> char_size() const;  // the text height as a fraction of the page's width, height
  std::filesystem::path path_;
  int width_, height_;
  int stream_ = -1;
  double text_scale_ = 1.0;
  bool open_ = false;
};

}  // namespace matmem::tools::plot
