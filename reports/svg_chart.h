// A small self-contained SVG chart (lines and/or markers per series, linear or log-2 x axis,
// optional horizontal reference line) for the sweep and history HTML reports.
#pragma once
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
  std::vector<ChartSeries> series;
  std::optional<double> y_reference;  // e.g. GPU memory capacity
  std::string y_reference_label;
  std::function<std::string(double)> x_format;  // tick labels; default: %g
  std::function<std::string(double)> y_format;
  int width = 760;
  int height = 420;
};

std::string render_svg_chart(const Chart& chart);
std::string html_escape(const std::string& text);
// The palette colour of series `i`.
std::string chart_color(size_t i);

}  // namespace shardline
