// The SVG chart's legend and note: every label, however long, lies inside the SVG's width and
// height (the sweep's series are named by every other varied setting, which can be long); a count
// on the x axis is ticked at whole numbers.
#include "reports/svg_chart.h"

#include <algorithm>
#include <regex>
#include <string>

#include <gtest/gtest.h>

namespace shardline {
namespace {

struct Svg {
  double width = 0, height = 0, view_width = 0, view_height = 0;
  double plot_bottom = 0;  // the plot frame's lower edge
};

Svg geometry(const std::string& svg) {
  Svg g;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(svg, m, std::regex("<svg [^>]*width=\"([0-9.]+)\" height=\"([0-9.]+)\" viewBox=\"0 0 ([0-9.]+) ([0-9.]+)\"")))
      << svg.substr(0, 200);
  g.width = std::stod(m[1]);
  g.height = std::stod(m[2]);
  g.view_width = std::stod(m[3]);
  g.view_height = std::stod(m[4]);
  EXPECT_TRUE(std::regex_search(svg, m, std::regex("<rect x=\"[0-9.]+\" y=\"([0-9.]+)\" width=\"[0-9.]+\" height=\"([0-9.]+)\" fill=\"none\"")));
  g.plot_bottom = std::stod(m[1]) + std::stod(m[2]);
  return g;
}

// Left-anchored text elements (the legend's; titles and axis labels are centred or end-anchored).
struct Label {
  double x, y;
  std::string text;
};
std::vector<Label> legend_labels(const std::string& svg) {
  std::vector<Label> out;
  const std::regex re("<text x=\"([0-9.]+)\" y=\"([0-9.]+)\">([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), (*it)[3]});
  return out;
}

Chart chart_with(const std::vector<std::string>& names) {
  Chart c;
  c.title = "Tokens/s per GPU against policy.bucket_bytes";
  for (size_t i = 0; i < names.size(); ++i) {
    ChartSeries s;
    s.name = names[i];
    s.x = {1, 2, 4};
    s.y = {static_cast<double>(i), 2, 3};
    c.series.push_back(s);
  }
  return c;
}

TEST(SvgChartLegend, LongLabelsLieInsideTheSvg) {
  const std::string settings =
      "mesh.shard=16, mesh.replicate=4, policy.forward_prefetch=2, policy.backward_prefetch=2, "
      "policy.reshard_after_forward=8, policy.micro_batches=4, policy.grad_sync=last, policy.param_dtype=\"bf16\"";
  const std::string unbroken(150, 'q');  // no ", " to wrap at: it is cut
  const Chart c = chart_with({"short", settings, unbroken});
  const std::string svg = render_svg_chart(c);
  const Svg g = geometry(svg);
  EXPECT_EQ(g.width, c.width);  // taller, never wider
  EXPECT_EQ(g.view_width, g.width);
  EXPECT_EQ(g.view_height, g.height);
  EXPECT_GT(g.height, c.height);
  const std::vector<Label> labels = legend_labels(svg);
  ASSERT_GE(labels.size(), 5u);  // the long ones take several lines
  std::string joined;
  for (const Label& l : labels) {
    EXPECT_LE(l.x + chart_text_width(l.text), g.view_width) << "cut off on the right: \"" << l.text << "\"";
    EXPECT_LE(l.y + 4, g.view_height) << "cut off at the bottom: \"" << l.text << "\"";
    EXPECT_GT(l.y - 11, g.plot_bottom) << "drawn over the plot: \"" << l.text << "\"";
    joined += l.text;
  }
  // Nothing is lost: the lines put back together are the names (the wrap drops the ", " space).
  EXPECT_NE(joined.find("short"), std::string::npos);
  EXPECT_NE(joined.find("policy.grad_sync=last,"), std::string::npos);
  EXPECT_NE(joined.find("&quot;bf16&quot;"), std::string::npos);
  const std::string unescaped = std::regex_replace(joined, std::regex("&quot;"), "\"");
  EXPECT_EQ(std::count(unescaped.begin(), unescaped.end(), 'q'), 150);
}

// Without a legend on the right the plot reaches the right edge: the last x tick label, centred
// on its tick, must still fit.
TEST(SvgChartLegend, CentredLabelsFitTheWidth) {
  Chart c = chart_with({"a", "b"});
  c.log_x = true;
  for (auto& s : c.series) s.x = {16, 64, 256};
  c.x_format = [](double v) { return std::to_string(static_cast<int>(v)) + ".0 MiB of something"; };
  const std::string svg = render_svg_chart(c);
  const Svg g = geometry(svg);
  const std::regex re("<text x=\"([0-9.]+)\" y=\"[0-9.]+\" text-anchor=\"middle\">([^<]*)</text>");
  size_t n = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it, ++n) {
    const double x = std::stod((*it)[1]), half = chart_text_width((*it)[2]) / 2;
    EXPECT_LE(x + half, g.view_width) << (*it)[2];
    EXPECT_GE(x - half, 0) << (*it)[2];
  }
  EXPECT_GE(n, 3u);  // the tick labels at least
}

// The note (the sweep's GPU memory per configuration) lies under the plot and the legend, inside
// the SVG, wrapped like the legend, with or without a legend above it.
TEST(SvgChartLegend, TheNoteIsWrappedInsideTheSvgUnderTheLegend) {
  const std::string note = "GPU memory per configuration: 40.0 GiB, 79.6 GiB, 80.0 GiB, 94.5 GiB, 141.0 GiB, 192.0 GiB, 288.0 GiB";
  for (const auto& names : {std::vector<std::string>{"all"}, std::vector<std::string>{"fits", "exceeds GPU memory"}}) {
    Chart c = chart_with(names);
    c.note = note;
    const std::string svg = render_svg_chart(c);
    const Svg g = geometry(svg);
    EXPECT_EQ(g.width, c.width);
    const std::vector<Label> labels = legend_labels(svg);
    ASSERT_GE(labels.size(), names.size() > 1 ? 4u : 2u) << svg;  // the legend's names, then the note in two lines
    std::string joined;
    for (size_t i = labels.size() - 2; i < labels.size(); ++i) joined += labels[i].text;
    EXPECT_EQ(joined, "GPU memory per configuration: 40.0 GiB, 79.6 GiB, 80.0 GiB, 94.5 GiB, 141.0 GiB, 192.0 GiB,288.0 GiB");
    for (size_t i = 0; i < labels.size(); ++i) {
      const Label& l = labels[i];
      EXPECT_LE(l.x + chart_text_width(l.text), g.view_width) << "cut off on the right: \"" << l.text << "\"";
      EXPECT_LE(l.y + 4, g.view_height) << "cut off at the bottom: \"" << l.text << "\"";
      EXPECT_GT(l.y - 11, g.plot_bottom) << "drawn over the plot: \"" << l.text << "\"";
      if (i > 0) {
        EXPECT_GT(l.y, labels[i - 1].y) << "drawn over the line above: \"" << l.text << "\"";
      }
    }
  }
}

// A count (micro-batch size, checkpoint every N layers) is ticked at whole numbers: 1 and 2, not
// 1, 1.2, ..., 2; 0 to 20 by 5, not by 2.5. Without the flag the ticks are as before.
TEST(SvgChartTicks, IntegerXIsTickedAtWholeNumbersOnly) {
  auto x_ticks = [](const Chart& c) {
    const std::string svg = render_svg_chart(c);
    std::vector<std::string> out;
    const std::regex re("text-anchor=\"middle\">([0-9.]+)</text>");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) out.push_back((*it)[1]);
    return out;
  };
  Chart c = chart_with({"all"});
  c.series[0].x = {1, 2, 1};
  EXPECT_EQ(x_ticks(c), (std::vector<std::string>{"1", "1.2", "1.4", "1.6", "1.8", "2"}));
  c.integer_x = true;
  EXPECT_EQ(x_ticks(c), (std::vector<std::string>{"1", "2"}));
  c.series[0].x = {0, 10, 20};
  EXPECT_EQ(x_ticks(c), (std::vector<std::string>{"0", "5", "10", "15", "20"}));
  c.series[0].x = {3, 3, 3};  // one value: the axis spans 2 to 4
  EXPECT_EQ(x_ticks(c), (std::vector<std::string>{"2", "3", "4"}));
}

// Every value 0 (an overlap efficiency nowhere above it) spans [0, 1]: the axis once ran from -1,
// ticking values no series can have (an audit).
TEST(SvgChartTicks, AllZeroValuesSpanZeroToOne) {
  Chart c = chart_with({"all"});
  c.series[0].y = {0, 0, 0};
  const std::string svg = render_svg_chart(c);
  std::vector<double> ticks;
  const std::regex re("text-anchor=\"end\">(-?[0-9.]+)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) ticks.push_back(std::stod((*it)[1]));
  ASSERT_FALSE(ticks.empty()) << svg.substr(0, 2000);
  EXPECT_EQ(*std::min_element(ticks.begin(), ticks.end()), 0.0);
  EXPECT_EQ(*std::max_element(ticks.begin(), ticks.end()), 1.0);
}

TEST(SvgChartLegend, OneSeriesHasNoLegendAndKeepsItsSize) {
  const std::string svg = render_svg_chart(chart_with({"all"}));
  EXPECT_TRUE(legend_labels(svg).empty());
  const Svg g = geometry(svg);
  EXPECT_EQ(g.height, 420);
}

TEST(SvgChartLegend, WrapSplitsAtCommasAndCutsWhatItMust) {
  EXPECT_EQ(wrap_label("a=1, b=2, c=3", 100), (std::vector<std::string>{"a=1, b=2, c=3"}));
  EXPECT_EQ(wrap_label("alpha=1, beta=2, gamma=3", 16), (std::vector<std::string>{"alpha=1, beta=2,", "gamma=3"}));
  EXPECT_EQ(wrap_label("abcdefghijklmnopqrst", 8), (std::vector<std::string>{"abcdefgh", "ijklmnop", "qrst"}));
  EXPECT_EQ(wrap_label("", 10), (std::vector<std::string>{""}));
  for (const auto& line : wrap_label(std::string(50, 'x') + ", " + std::string(30, 'y'), 20)) EXPECT_LE(line.size(), 20u);
}

}  // namespace
}  // namespace shardline
