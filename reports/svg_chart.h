// A small self-contained SVG chart (lines and/or markers per series, linear or log-2 x axis,
// optional horizontal reference line) for the sweep and history HTML reports. With more than
// one series a legend sits below the plot, one entry per series, long names wrapped at ", "
// (or cut into pieces) to the chart's width; under it the note, if any, wrapped the same way.
// The SVG grows taller, never wider, so no label is cut off. The title is one line: keep it
// short (chart_title_width), and put what does not fit in the note.
#pragma once
#include "reports/html_escape.h"
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shardline {

struct ChartSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
  std::vector<std::string> titles;  // optional hover text per point
  bool line = true;
  bool markers = true;
  std::string color;  // empty: from the palette by series position
  double marker_radius = 3.5;
};

struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;  // log-2 x axis (sizes)
  bool integer_x = false;  // x is a count: linear x ticks only at whole numbers (1, 2, not 1.2)
  std::vector<ChartSeries> series;
  std::optional<double> y_reference;  // e.g. GPU memory capacity
  std::string y_reference_label;
  std::string note;  // a line under the plot, after the legend (wrapped to the width); empty: none
  std::function<std::string(double)> x_format;  // tick labels; default: %g
  std::function<std::string(double)> y_format;
  int width = 760;
  int height = 420;  // without the legend, which adds its own height below
};

std::string render_svg_chart(const Chart& chart);
// The estimated width in pixels of `text` at the charts' 11 px sans-serif: 7 px a character, a
// little above the widest common glyphs' average, so an estimate that fits does fit.
double chart_text_width(const std::string& text);
// The estimated width in pixels of a title at the charts' 14 px bold: 10 px a character, by the
// same reasoning; a title whose estimate is over the chart's width is cut off at both ends.
double chart_title_width(const std::string& text);
// `text` split into lines of at most `max_chars` characters: at ", " where it can be, else cut.
std::vector<std::string> wrap_label(const std::string& text, size_t max_chars);
// The palette colour of series `i`.
std::string chart_color(size_t i);

}  // namespace shardline
