// SVG chart rendering (see reports/svg_chart.h).
#include "reports/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace shardline {
namespace {

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

size_t char_count(const std::string& text) {
  size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80 ? 1 : 0;  // UTF-8: count characters, not bytes
  return chars;
}

std::string default_format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// About `target` round ticks covering [lo, hi]; with `integers`, whole numbers only.
std::vector<double> linear_ticks(double lo, double hi, int target = 6, bool integers = false) {
  const double span = hi - lo;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (const double s = mag * m; s >= raw && (!integers || s == std::floor(s))) {
      step = s;
      break;
    }
  if (integers) step = std::max(step, 1.0);
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

}  // namespace

double chart_text_width(const std::string& text) { return 7.0 * static_cast<double>(char_count(text)); }

double chart_title_width(const std::string& text) { return 10.0 * static_cast<double>(char_count(text)); }

std::vector<std::string> wrap_label(const std::string& text, size_t max_chars) {
  max_chars = std::max<size_t>(max_chars, 8);
  // Pieces that end with their ", " so that joining them gives the text back.
  std::vector<std::string> pieces;
  for (size_t start = 0; start < text.size();) {
    const size_t comma = text.find(", ", start);
    const size_t end = comma == std::string::npos ? text.size() : comma + 2;
    std::string piece = text.substr(start, end - start);
    while (piece.size() > max_chars) {  // one setting longer than a line: cut it
      pieces.push_back(piece.substr(0, max_chars));
      piece.erase(0, max_chars);
    }
    if (!piece.empty()) pieces.push_back(std::move(piece));
    start = end;
  }
  std::vector<std::string> lines;
  std::string line;
  for (const auto& piece : pieces) {
    const size_t visible = piece.find_last_not_of(' ') + 1;  // a line's trailing ", " space is dropped
    if (!line.empty() && line.size() + visible > max_chars) {
      while (!line.empty() && line.back() == ' ') line.pop_back();
      lines.push_back(std::move(line));
      line.clear();
    }
    line += piece;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  if (!line.empty() || lines.empty()) lines.push_back(std::move(line));
  return lines;
}

std::string chart_color(size_t i) {
  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a"};
  return palette[i % (sizeof palette / sizeof palette[0])];
}

std::string render_svg_chart(const Chart& chart) {
  const double W = chart.width;
  const double left = 78, margin = 16, top = 34, bottom = 52;
  const double ph = chart.height - top - bottom;
  // The legend, below the plot: one entry per series (swatch, then the name wrapped to fit).
  constexpr double kLegendLine = 15, kLegendGap = 4, kSwatch = 14;
  const double legend_x = left;
  const size_t legend_chars =
      static_cast<size_t>(std::max(1.0, std::floor((W - margin - legend_x - kSwatch) / chart_text_width("x"))));
  std::vector<std::vector<std::string>> legend;
  double legend_h = 0;
  if (chart.series.size() > 1) {
    for (const auto& s : chart.series) {
      legend.push_back(wrap_label(s.name, legend_chars));
      legend_h += kLegendLine * static_cast<double>(legend.back().size()) + kLegendGap;
    }
    legend_h += 8;
  }
  // The note, under the legend: lines as wide as the legend's, no swatch.
  const size_t note_chars = static_cast<size_t>(std::max(1.0, std::floor((W - margin - legend_x) / chart_text_width("x"))));
  const std::vector<std::string> note = chart.note.empty() ? std::vector<std::string>{} : wrap_label(chart.note, note_chars);
  if (!note.empty()) legend_h += kLegendLine * static_cast<double>(note.size()) + kLegendGap + (legend.empty() ? 8 : 0);
  const double H = chart.height + legend_h;
  auto xf = chart.x_format ? chart.x_format : default_format;
  auto yf = chart.y_format ? chart.y_format : default_format;

  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (const auto& s : chart.series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (chart.log_x && s.x[i] <= 0) continue;
      xmin = std::min(xmin, s.x[i]);
      xmax = std::max(xmax, s.x[i]);
      ymin = std::min(ymin, s.y[i]);
      ymax = std::max(ymax, s.y[i]);
    }
  if (chart.y_reference) {
    ymin = std::min(ymin, *chart.y_reference);
    ymax = std::max(ymax, *chart.y_reference);
  }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " "
      << H << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg << "<text x=\"" << W / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">"
      << html_escape(chart.title) << "</text>\n";
  if (!(xmin <= xmax)) {
    svg << "<text x=\"" << W / 2 << "\" y=\"" << H / 2 << "\" text-anchor=\"middle\">no data</text>\n</svg>\n";
    return svg.str();
  }
  if (ymin > 0 && ymin < 0.5 * ymax) ymin = 0;  // anchor at zero when it costs little
  if (ymax == 0 && ymin == 0) {
    ymax = 1;  // every value 0 (an efficiency nowhere above it): [0, 1], not an axis of negative values
  } else if (ymax == ymin) {
    const double pad = std::abs(ymax) * 0.05;
    ymin -= pad;
    ymax += pad;
  } else {
    const double pad = (ymax - ymin) * 0.05;
    ymax += pad;
    if (ymin != 0) ymin -= pad;
  }
  double lx0 = chart.log_x ? std::log2(xmin) : xmin, lx1 = chart.log_x ? std::log2(xmax) : xmax;
  if (lx0 == lx1) {
    lx0 -= 1;
    lx1 += 1;
  }
  std::vector<double> xticks;
  if (chart.log_x) {
    const int e0 = static_cast<int>(std::ceil(lx0 - 1e-9)), e1 = static_cast<int>(std::floor(lx1 + 1e-9));
    const int stride = std::max(1, (e1 - e0 + 1 + 9) / 10);
    for (int e = e0; e <= e1; e += stride) xticks.push_back(std::pow(2.0, e));
  } else {
    xticks = linear_ticks(lx0, lx1, 8, chart.integer_x);
  }
  // Room on the right for half the last x tick label, which is centred on its tick.
  const double right = xticks.empty() ? margin : std::max(margin, chart_text_width(xf(xticks.back())) / 2 + 4);
  const double pw = W - left - right;
  auto px = [&](double x) { return left + ((chart.log_x ? std::log2(x) : x) - lx0) / (lx1 - lx0) * pw; };
  auto py = [&](double y) { return top + ph - (y - ymin) / (ymax - ymin) * ph; };

  // Axes, grid and ticks.
  svg << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
      << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (double t : linear_ticks(ymin, ymax)) {
    svg << "<line x1=\"" << left << "\" x2=\"" << fmt(left + pw) << "\" y1=\"" << fmt(py(t)) << "\" y2=\"" << fmt(py(t))
        << "\" stroke=\"#ddd\"/><text x=\"" << left - 6 << "\" y=\"" << fmt(py(t) + 4) << "\" text-anchor=\"end\">"
        << html_escape(yf(t)) << "</text>\n";
  }
  for (double t : xticks) {
    svg << "<line x1=\"" << fmt(px(t)) << "\" x2=\"" << fmt(px(t)) << "\" y1=\"" << top << "\" y2=\"" << fmt(top + ph)
        << "\" stroke=\"#eee\"/><text x=\"" << fmt(px(t)) << "\" y=\"" << fmt(top + ph + 16)
        << "\" text-anchor=\"middle\">" << html_escape(xf(t)) << "</text>\n";
  }
  svg << "<text x=\"" << fmt(left + pw / 2) << "\" y=\"" << fmt(top + ph + bottom - 12) << "\" text-anchor=\"middle\">"
      << html_escape(chart.x_label) << "</text>\n";
  svg << "<text transform=\"translate(16," << fmt(top + ph / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
      << html_escape(chart.y_label) << "</text>\n";
  if (chart.y_reference) {
    const double y = py(*chart.y_reference);
    svg << "<line x1=\"" << left << "\" x2=\"" << fmt(left + pw) << "\" y1=\"" << fmt(y) << "\" y2=\"" << fmt(y)
        << "\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/><text x=\"" << fmt(left + pw - 4) << "\" y=\"" << fmt(y - 4)
        << "\" text-anchor=\"end\" fill=\"#d62728\">" << html_escape(chart.y_reference_label) << "</text>\n";
  }
  // Series.
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const auto& ser = chart.series[s];
    const std::string color = ser.color.empty() ? chart_color(s) : ser.color;
    std::vector<size_t> order;
    for (size_t i = 0; i < ser.x.size(); ++i)
      if (!chart.log_x || ser.x[i] > 0) order.push_back(i);
    if (ser.line && order.size() > 1) {
      svg << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.6\" points=\"";
      for (size_t i : order) svg << fmt(px(ser.x[i])) << "," << fmt(py(ser.y[i])) << " ";
      svg << "\"/>\n";
    }
    if (ser.markers) {
      for (size_t i : order) {
        svg << "<circle cx=\"" << fmt(px(ser.x[i])) << "\" cy=\"" << fmt(py(ser.y[i])) << "\" r=\"" << ser.marker_radius
            << "\" fill=\"" << color << "\" fill-opacity=\"0.8\">";
        if (i < ser.titles.size()) svg << "<title>" << html_escape(ser.titles[i]) << "</title>";
        svg << "</circle>\n";
      }
    }
  }
  double ly = top + ph + bottom + 4 + 11;  // the first legend line's baseline
  for (size_t s = 0; s < legend.size(); ++s) {
    const auto& ser = chart.series[s];
    const std::string color = ser.color.empty() ? chart_color(s) : ser.color;
    svg << "<rect x=\"" << fmt(legend_x) << "\" y=\"" << fmt(ly - 9) << "\" width=\"10\" height=\"10\" fill=\"" << color << "\"/>";
    for (const auto& line : legend[s]) {
      svg << "<text x=\"" << fmt(legend_x + kSwatch) << "\" y=\"" << fmt(ly) << "\">" << html_escape(line) << "</text>";
      ly += kLegendLine;
    }
    svg << "\n";
    ly += kLegendGap;
  }
  for (const auto& line : note) {
    svg << "<text x=\"" << fmt(legend_x) << "\" y=\"" << fmt(ly) << "\">" << html_escape(line) << "</text>\n";
    ly += kLegendLine;
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace shardline
