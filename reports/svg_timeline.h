// Drawing one rank's step of a Timeline as an inline SVG (one lane per stream, rectangles colored
// by op kind with hover titles, a time axis, and the memory curve with the capacity line).
// Several timelines share one SvgAxis so they can be stacked on the same time scale
// (predicted over measured): each is drawn relative to its own step start.
#pragma once
#include "reports/html_escape.h"
#include <string>
#include <string_view>
#include <vector>

#include "core/metrics.h"
#include "core/timeline.h"

namespace shardline {

struct SvgAxis {
  double span_us = 0;           // time shown: [0, span_us] after each timeline's step start
  double plot_width_px = 1100;  // width of the time plot
  double label_width_px = 110;  // lane labels on the left
};

// An axis long enough for the longest of `windows` (all drawn on one scale).
SvgAxis shared_axis(const std::vector<StepWindow>& windows, double plot_width_px = 1100);

struct SvgTimelineOptions {
  std::string title;             // drawn above the lanes, e.g. "predicted (sim), rank 0"
  bool draw_memory = true;       // the memory panel below the lanes (when samples exist)
  double lane_height_px = 20;
  double memory_height_px = 90;
  // Ops narrower than this are not drawn one by one: consecutive narrow ops of a lane within a
  // pixel of each other merge into one rectangle titled "N short ops ...". Keeps 20k+ op
  // timelines small and fast to render; every op wider than this keeps its own rectangle.
  double min_op_width_px = 0.5;
};

// One <svg> element (no xmlns: it is meant for inline HTML5) drawing the intervals of
// window.rank / window.iteration. Alloc/free markers are not drawn.
std::string svg_timeline(const Timeline& timeline, const StepWindow& window, const SvgAxis& axis,
                         const SvgTimelineOptions& options = {});

// A small <svg> legend of the op-kind colors.
std::string svg_legend();

// The fill color of an op kind ("#4e79a7"), shared by the timeline and the legend.
std::string_view op_kind_color(OpKind kind);


}  // namespace shardline
