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

std::string default_format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// About `target` round ticks covering [lo, hi].
std::vector<double> linear_ticks(double lo, double hi, int target = 6) {
  const double span = hi - lo;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (mag * m >= raw) {
      step = mag * m;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string chart_color(size_t i) {
  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a"};
  return palette[i % (sizeof palette / sizeof palette[0])];
}

std::string render_svg_chart(const Chart& chart) {
  const double W = chart.width, H = chart.height;
  const double left = 78, right = 16, top = 34, bottom = 52;
  const double legend_w = chart.series.size() > 1 ? 230 : 0;
  const double pw = W - left - right - legend_w, ph = H - top - bottom;
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
  if (ymax == ymin) {
    const double pad = ymax == 0 ? 1 : std::abs(ymax) * 0.05;
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
  std::vector<double> xticks;
  if (chart.log_x) {
    const int e0 = static_cast<int>(std::ceil(lx0 - 1e-9)), e1 = static_cast<int>(std::floor(lx1 + 1e-9));
    const int stride = std::max(1, (e1 - e0 + 1 + 9) / 10);
    for (int e = e0; e <= e1; e += stride) xticks.push_back(std::pow(2.0, e));
  } else {
    xticks = linear_ticks(lx0, lx1, 8);
  }
  for (double t : xticks) {
    svg << "<line x1=\"" << fmt(px(t)) << "\" x2=\"" << fmt(px(t)) << "\" y1=\"" << top << "\" y2=\"" << fmt(top + ph)
        << "\" stroke=\"#eee\"/><text x=\"" << fmt(px(t)) << "\" y=\"" << fmt(top + ph + 16)
        << "\" text-anchor=\"middle\">" << html_escape(xf(t)) << "</text>\n";
  }
  svg << "<text x=\"" << fmt(left + pw / 2) << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">" << html_escape(chart.x_label)
      << "</text>\n";
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
    if (legend_w > 0) {
      const double ly = top + 8 + 16.0 * static_cast<double>(s);
      const double lx = left + pw + 12;
      svg << "<rect x=\"" << fmt(lx) << "\" y=\"" << fmt(ly - 8) << "\" width=\"10\" height=\"10\" fill=\"" << color
          << "\"/><text x=\"" << fmt(lx + 14) << "\" y=\"" << fmt(ly + 1) << "\">" << html_escape(ser.name) << "</text>\n";
    }
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace shardline
