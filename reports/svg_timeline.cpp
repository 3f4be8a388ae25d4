#include "reports/svg_timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/units.h"

namespace shardline {

namespace {

constexpr double kTitleHeightPx = 20;
constexpr double kAxisHeightPx = 22;
constexpr double kGapPx = 10;
constexpr double kRightPadPx = 20;
constexpr double kMergeGapPx = 1.0;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A "nice" tick step (1, 2 or 5 x 10^k) giving about `target` ticks over span.
double tick_step(double span, int target) {
  if (span <= 0) return 1;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

}  // namespace

std::string_view op_kind_color(OpKind kind) {
  switch (kind) {
    case OpKind::Compute: return "#4e79a7";
    case OpKind::CopyIn: return "#f28e2b";
    case OpKind::AllGather: return "#59a14f";
    case OpKind::CopyOut: return "#edc948";
    case OpKind::ReduceScatter: return "#e15759";
    case OpKind::AllReduce: return "#b07aa1";
    case OpKind::Alloc:
    case OpKind::Free: return "#9c9c9c";
  }
  return "#9c9c9c";
}

SvgAxis shared_axis(const std::vector<StepWindow>& windows, double plot_width_px) {
  SvgAxis axis;
  axis.plot_width_px = plot_width_px;
  for (const StepWindow& w : windows) axis.span_us = std::max(axis.span_us, w.end_us - w.start_us);
  if (axis.span_us <= 0) axis.span_us = 1;
  return axis;
}

std::string svg_legend() {
  std::string out = "<svg class=\"legend\" width=\"760\" height=\"20\" role=\"img\">";
  double x = 0;
  for (OpKind k : {OpKind::Compute, OpKind::CopyIn, OpKind::AllGather, OpKind::CopyOut, OpKind::ReduceScatter, OpKind::AllReduce}) {
    out += "<rect x=\"" + num(x) + "\" y=\"4\" width=\"12\" height=\"12\" fill=\"" + std::string(op_kind_color(k)) + "\"/>";
    out += "<text x=\"" + num(x + 16) + "\" y=\"14\" font-size=\"12\">" + std::string(op_kind_name(k)) + "</text>";
    x += 126;
  }
  out += "</svg>";
  return out;
}

namespace {

// Where everything of one timeline's SVG goes, in pixels.
struct TimelineLayout {
  double origin_us = 0;    // the step start: time 0 of the axis
  double span_us = 1;      // time shown
  double left = 0;         // x of time 0 (right of the lane labels)
  double plot_w = 0;
  double px_per_us = 0;
  double axis_top = 0;
  double lanes_top = 0;
  double lane_h = 0;
  double lanes_bottom = 0;
  bool memory = false;     // the memory panel is drawn
  double mem_top = 0;
  double mem_h = 0;
  double height = 0;
  double width = 0;

  double x_of(double time_us) const { return left + (time_us - origin_us) * px_per_us; }
  // The memory panel's y of `bytes` when its top is `top_bytes`.
  double y_of_bytes(double bytes, double top_bytes) const { return mem_top + mem_h - bytes / top_bytes * mem_h; }
};

TimelineLayout timeline_layout(const Timeline& t, const StepWindow& window, const SvgAxis& axis,
                               const SvgTimelineOptions& options) {
  TimelineLayout L;
  L.origin_us = window.start_us;
  L.span_us = axis.span_us > 0 ? axis.span_us : 1;
  L.left = axis.label_width_px;
  L.plot_w = axis.plot_width_px;
  L.px_per_us = L.plot_w / L.span_us;
  L.axis_top = options.title.empty() ? 0 : kTitleHeightPx;
  L.lanes_top = L.axis_top + kAxisHeightPx;
  L.lane_h = options.lane_height_px;
  L.lanes_bottom = L.lanes_top + kNumStreams * L.lane_h;
  L.memory = options.draw_memory && !t.memory.empty();
  L.mem_top = L.lanes_bottom + kGapPx;
  L.mem_h = options.memory_height_px;
  L.height = L.memory ? L.mem_top + L.mem_h + kGapPx : L.lanes_bottom + 4;
  L.width = L.left + L.plot_w + kRightPadPx;
  return L;
}

// Time axis: ticks over the lanes (and the memory panel), relative to the step start.
void draw_time_axis(std::string& out, const TimelineLayout& L) {
  const double step = tick_step(L.span_us, 10);
  out += "<g class=\"axis\" stroke=\"#bbb\">";
  for (double tk = 0; tk <= L.span_us * (1 + 1e-9); tk += step) {
    const double x = L.left + tk * L.px_per_us;
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(L.lanes_top - 4) + "\" x2=\"" + num(x) + "\" y2=\"" + num(L.memory ? L.mem_top + L.mem_h : L.lanes_bottom) + "\" stroke-dasharray=\"2,3\"/>";
    out += "<text x=\"" + num(x) + "\" y=\"" + num(L.lanes_top - 7) + "\" text-anchor=\"middle\" stroke=\"none\" fill=\"#333\">" + (tk == 0 ? std::string("0") : html_escape(format_time_us(tk))) + "</text>";
  }
  out += "</g>";
}

// An op's drawn extent on its lane.
struct Placed {
  double x0, x1;
  const OpInterval* iv;
};

// The drawn ops of window.rank / window.iteration, per stream, in drawing order (left to right,
// then by op). Alloc/free markers are left out.
std::vector<std::vector<Placed>> place_ops_on_lanes(const Timeline& t, const StepWindow& window, const TimelineLayout& L) {
  std::vector<std::vector<Placed>> lanes(kNumStreams);
  for (const OpInterval& iv : t.intervals) {
    if (iv.rank != window.rank || iv.iteration != window.iteration) continue;
    const Op& op = t.ops.at(iv.op);
    if (is_marker(op.kind)) continue;
    lanes[static_cast<int>(op.stream)].push_back({L.x_of(iv.start_us), L.x_of(iv.end_us), &iv});
  }
  for (auto& placed : lanes)
    std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) { return a.x0 < b.x0 || (a.x0 == b.x0 && a.iv->op < b.iv->op); });
  return lanes;
}

// An op's hover title: name, kind, unit, bucket, bytes, group, duration, start, micro-batch.
std::string op_title(const Timeline& t, const Op& op, const OpInterval& iv, double origin_us) {
  std::string title = t.name(op) + " (" + std::string(op_kind_name(op.kind)) + ")";
  if (op.unit >= 0) title += " unit " + std::to_string(op.unit);
  if (op.bucket >= 0) title += " bucket " + std::to_string(op.bucket);
  if (op.bytes() > 0) title += ", " + format_bytes(op.bytes());
  if (op.group != CommGroup::None) title += ", " + std::string(comm_group_name(op.group)) + " group of " + std::to_string(t.group_size(op));
  title += ", " + format_time_us(iv.end_us - iv.start_us) + " at " + format_time_us(iv.start_us - origin_us);
  title += ", mb " + std::to_string(op.microbatch) + " " + std::string(phase_name(op.phase));
  return title;
}

// Consecutive ops too narrow to draw alone, drawn as one rectangle.
struct Merged {
  const Placed* first = nullptr;
  double x0 = 0, x1 = 0;
  double start_us = 0, end_us = 0;
  int count = 0;
  std::map<OpKind, int> kinds;
};

// A run of narrow ops as one rectangle: its kinds' color (lighter) or grey for several kinds,
// titled with the count, the kinds and the time span.
void draw_merged_ops(std::string& out, const Merged& merged, double y, const TimelineLayout& L, double min_op_width_px) {
  std::string kinds;
  for (const auto& [k, n] : merged.kinds) kinds += (kinds.empty() ? "" : ", ") + std::string(op_kind_name(k)) + " x" + std::to_string(n);
  // One kind: its color, lighter; several: grey.
  const std::string fill = merged.kinds.size() == 1 ? std::string(op_kind_color(merged.kinds.begin()->first)) + "\" fill-opacity=\"0.6" : "#888";
  out += "<rect class=\"merged\" x=\"" + num(merged.x0) + "\" y=\"" + num(y + 2) + "\" width=\"" + num(std::max(merged.x1 - merged.x0, min_op_width_px)) +
         "\" height=\"" + num(L.lane_h - 4) + "\" fill=\"" + fill + "\"><title>" + std::to_string(merged.count) + " short ops (" + html_escape(kinds) + ") from " +
         html_escape(format_time_us(merged.start_us - L.origin_us)) + " to " + html_escape(format_time_us(merged.end_us - L.origin_us)) + "</title></rect>";
}

// One lane: its background and label, every op wide enough as its own rectangle, and runs of
// narrow ops within a pixel of each other merged.
void draw_lane(std::string& out, const Timeline& t, int stream, const std::vector<Placed>& placed, const TimelineLayout& L,
               double min_op_width_px) {
  const double y = L.lanes_top + stream * L.lane_h;
  const double lane_h = L.lane_h;
  const std::string name(stream_name(static_cast<StreamId>(stream)));
  out += "<g class=\"lane\" data-stream=\"" + name + "\">";
  out += "<rect x=\"" + num(L.left) + "\" y=\"" + num(y + 1) + "\" width=\"" + num(L.plot_w) + "\" height=\"" + num(lane_h - 2) + "\" fill=\"#f3f3f3\"/>";
  out += "<text x=\"" + num(L.left - 6) + "\" y=\"" + num(y + lane_h * 0.7) + "\" text-anchor=\"end\">" + name + "</text>";
  auto draw_op = [&](const Placed& p, double width_px) {
    const Op& op = t.ops[p.iv->op];
    out += "<rect x=\"" + num(p.x0) + "\" y=\"" + num(y + 2) + "\" width=\"" + num(width_px) + "\" height=\"" + num(lane_h - 4) + "\" fill=\"" +
           std::string(op_kind_color(op.kind)) + "\"><title>" + html_escape(op_title(t, op, *p.iv, L.origin_us)) + "</title></rect>";
  };
  Merged merged;
  auto flush = [&]() {
    if (merged.count == 0) return;
    if (merged.count == 1) {  // a lone narrow op keeps its own title, drawn at the minimum width
      draw_op(*merged.first, min_op_width_px);
      merged = Merged{};
      return;
    }
    draw_merged_ops(out, merged, y, L, min_op_width_px);
    merged = Merged{};
  };
  for (const Placed& p : placed) {
    const Op& op = t.ops[p.iv->op];
    if (p.x1 - p.x0 < min_op_width_px) {
      if (merged.count > 0 && p.x0 > merged.x1 + kMergeGapPx) flush();
      if (merged.count == 0) {
        merged.first = &p;
        merged.x0 = p.x0;
        merged.start_us = p.iv->start_us;
      }
      merged.x1 = std::max(merged.x1, p.x1);
      merged.end_us = std::max(merged.end_us, p.iv->end_us);
      merged.count += 1;
      merged.kinds[op.kind] += 1;
      continue;
    }
    flush();
    draw_op(p, p.x1 - p.x0);
  }
  flush();
  out += "</g>";
}

// The polyline points of live bytes over the window as a step curve. Samples in the same pixel
// column keep the column's entry level, its maximum and its exit level, so peaks survive
// decimation.
std::string memory_curve_points(const std::vector<MemorySample>& samples, const TimelineLayout& L, double top_bytes) {
  auto y_of = [&](int64_t bytes) { return L.y_of_bytes(static_cast<double>(bytes), top_bytes); };
  std::string points;
  int64_t level = 0;
  bool have_level = false;
  const double x_end = L.left + L.plot_w;
  double col = -1;
  int64_t col_max = 0, col_last = 0;
  auto emit = [&](double x, int64_t bytes) { points += num(x) + "," + num(y_of(bytes)) + " "; };
  auto close_column = [&]() {
    if (col < 0) return;
    emit(col, col_max);
    emit(col, col_last);
  };
  for (const MemorySample& m : samples) {
    const double x = L.x_of(m.time_us);
    if (x < L.left) {
      level = m.bytes;
      have_level = true;
      continue;
    }
    if (x > x_end) break;
    if (points.empty()) emit(L.left, have_level ? level : m.bytes);
    const double c = std::floor(x);
    if (c != col) {
      close_column();
      emit(c, col < 0 ? (have_level ? level : m.bytes) : col_last);
      col = c;
      col_max = m.bytes;
    }
    col_max = std::max(col_max, m.bytes);
    col_last = m.bytes;
    level = m.bytes;
    have_level = true;
  }
  close_column();
  if (have_level) {
    if (points.empty()) emit(L.left, level);
    emit(x_end, level);
  }
  return points;
}

// Memory: live bytes as a step curve, scaled to max(peak, capacity), with the capacity line
// and the capacity less the margin. Where memory is counted in the host's order the curve is the
// same bytes as the streams reach each alloc and free (memory_by_stream: the host issues the step
// in its first moments), and its title gives the host-order peak the summary states beside its own.
void draw_memory_panel(std::string& out, const Timeline& t, const TimelineLayout& L) {
  const double mem_top = L.mem_top, mem_h = L.mem_h, left = L.left, plot_w = L.plot_w;
  const bool by_stream = !t.memory_by_stream.empty();
  const std::vector<MemorySample>& drawn = t.drawn_memory();
  int64_t peak = 0, drawn_peak = 0;
  for (const MemorySample& m : t.memory) peak = std::max(peak, m.bytes);
  for (const MemorySample& m : drawn) drawn_peak = std::max(drawn_peak, m.bytes);
  const double top_bytes = static_cast<double>(std::max<int64_t>({peak, drawn_peak, t.memory_capacity_bytes, 1}));
  out += "<g class=\"memory\">";
  out += "<rect x=\"" + num(left) + "\" y=\"" + num(mem_top) + "\" width=\"" + num(plot_w) + "\" height=\"" + num(mem_h) + "\" fill=\"#fafafa\" stroke=\"#ddd\"/>";
  out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(mem_top + 12) + "\" text-anchor=\"end\">memory</text>";
  out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(mem_top + 26) + "\" text-anchor=\"end\">" + html_escape(format_bytes(static_cast<int64_t>(top_bytes))) + "</text>";
  const double x_end = left + plot_w;
  const std::string title =
      by_stream ? "live bytes (rank 0) as the streams reach each alloc and free, peak " + format_bytes(drawn_peak) +
                      "; in the order the host issues them (the caching allocator's, the summary's), peak " + format_bytes(peak)
                : "live bytes (rank 0), peak " + format_bytes(peak);
  out += "<polyline fill=\"none\" stroke=\"#2a6fb0\" stroke-width=\"1.2\" points=\"" + memory_curve_points(drawn, L, top_bytes) +
         "\"><title>" + html_escape(title) + "</title></polyline>";
  if (t.memory_capacity_bytes > 0) {
    const double cy = L.y_of_bytes(static_cast<double>(t.memory_capacity_bytes), top_bytes);
    out += "<line class=\"capacity\" x1=\"" + num(left) + "\" y1=\"" + num(cy) + "\" x2=\"" + num(x_end) + "\" y2=\"" + num(cy) +
           "\" stroke=\"#c0392b\" stroke-dasharray=\"6,3\"><title>capacity " + html_escape(format_bytes(t.memory_capacity_bytes)) + "</title></line>";
    const double limit = static_cast<double>(t.memory_capacity_bytes) * (1.0 - t.memory_margin);
    const double ly = L.y_of_bytes(limit, top_bytes);
    out += "<line class=\"limit\" x1=\"" + num(left) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(x_end) + "\" y2=\"" + num(ly) +
           "\" stroke=\"#e67e22\" stroke-dasharray=\"2,3\"><title>capacity less the " + num(t.memory_margin * 100) + "% margin: " +
           html_escape(format_bytes(static_cast<int64_t>(limit))) + "</title></line>";
  }
  out += "</g>";
}

}  // namespace

std::string svg_timeline(const Timeline& t, const StepWindow& window, const SvgAxis& axis, const SvgTimelineOptions& options) {
  const TimelineLayout L = timeline_layout(t, window, axis, options);
  std::string out;
  out.reserve(4096 + t.intervals.size() * 160);
  out += "<svg class=\"timeline\" width=\"" + num(L.width) + "\" height=\"" + num(L.height) + "\" viewBox=\"0 0 " + num(L.width) + " " +
         num(L.height) + "\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\">";
  if (!options.title.empty()) out += "<text x=\"0\" y=\"14\" font-size=\"13\" font-weight=\"bold\">" + html_escape(options.title) + "</text>";
  draw_time_axis(out, L);
  const std::vector<std::vector<Placed>> lanes = place_ops_on_lanes(t, window, L);
  for (int s = 0; s < kNumStreams; ++s) draw_lane(out, t, s, lanes[s], L, options.min_op_width_px);
  if (L.memory) draw_memory_panel(out, t, L);
  out += "</svg>";
  return out;
}

}  // namespace shardline
