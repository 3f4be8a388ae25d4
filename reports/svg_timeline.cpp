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

struct Placed {
  double x0, x1;
  const OpInterval* iv;
};

struct Merged {
  const Placed* first = nullptr;
  double x0 = 0, x1 = 0;
  double start_us = 0, end_us = 0;
  int count = 0;
  std::map<OpKind, int> kinds;
};

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

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
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

std::string svg_timeline(const Timeline& t, const StepWindow& window, const SvgAxis& axis, const SvgTimelineOptions& options) {
  const double origin = window.start_us;
  const double span = axis.span_us > 0 ? axis.span_us : 1;
  const double left = axis.label_width_px;
  const double plot_w = axis.plot_width_px;
  const double px_per_us = plot_w / span;
  auto x_of = [&](double time_us) { return left + (time_us - origin) * px_per_us; };

  const double axis_top = options.title.empty() ? 0 : kTitleHeightPx;
  const double lanes_top = axis_top + kAxisHeightPx;
  const double lane_h = options.lane_height_px;
  const double lanes_bottom = lanes_top + kNumStreams * lane_h;
  const bool memory = options.draw_memory && !t.memory.empty();
  const double mem_top = lanes_bottom + kGapPx;
  const double height = memory ? mem_top + options.memory_height_px + kGapPx : lanes_bottom + 4;
  const double width = left + plot_w + kRightPadPx;

  std::string out;
  out.reserve(4096 + t.intervals.size() * 160);
  out += "<svg class=\"timeline\" width=\"" + num(width) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) + " " +
         num(height) + "\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\">";
  if (!options.title.empty()) out += "<text x=\"0\" y=\"14\" font-size=\"13\" font-weight=\"bold\">" + html_escape(options.title) + "</text>";

  // Time axis: ticks over the lanes, relative to the step start.
  const double step = tick_step(span, 10);
  out += "<g class=\"axis\" stroke=\"#bbb\">";
  for (double tk = 0; tk <= span * (1 + 1e-9); tk += step) {
    const double x = left + tk * px_per_us;
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(lanes_top - 4) + "\" x2=\"" + num(x) + "\" y2=\"" + num(memory ? mem_top + options.memory_height_px : lanes_bottom) + "\" stroke-dasharray=\"2,3\"/>";
    out += "<text x=\"" + num(x) + "\" y=\"" + num(lanes_top - 7) + "\" text-anchor=\"middle\" stroke=\"none\" fill=\"#333\">" + (tk == 0 ? std::string("0") : html_escape(format_time_us(tk))) + "</text>";
  }
  out += "</g>";

  // Lanes: one per stream.
  std::vector<std::vector<Placed>> lanes(kNumStreams);
  for (const OpInterval& iv : t.intervals) {
    if (iv.rank != window.rank || iv.iteration != window.iteration) continue;
    const Op& op = t.ops.at(iv.op);
    if (op.kind == OpKind::Alloc || op.kind == OpKind::Free) continue;
    lanes[static_cast<int>(op.stream)].push_back({x_of(iv.start_us), x_of(iv.end_us), &iv});
  }
  for (int s = 0; s < kNumStreams; ++s) {
    const double y = lanes_top + s * lane_h;
    const std::string name(stream_name(static_cast<StreamId>(s)));
    out += "<g class=\"lane\" data-stream=\"" + name + "\">";
    out += "<rect x=\"" + num(left) + "\" y=\"" + num(y + 1) + "\" width=\"" + num(plot_w) + "\" height=\"" + num(lane_h - 2) + "\" fill=\"#f3f3f3\"/>";
    out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(y + lane_h * 0.7) + "\" text-anchor=\"end\">" + name + "</text>";
    auto& placed = lanes[s];
    std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) { return a.x0 < b.x0 || (a.x0 == b.x0 && a.iv->op < b.iv->op); });
    auto draw_op = [&](const Placed& p, double width_px) {
      const Op& op = t.ops[p.iv->op];
      std::string title = op.name + " (" + std::string(op_kind_name(op.kind)) + ")";
      if (op.unit >= 0) title += " unit " + std::to_string(op.unit);
      if (op.bucket >= 0) title += " bucket " + std::to_string(op.bucket);
      if (op.bytes > 0) title += ", " + format_bytes(op.bytes);
      if (op.group != CommGroup::None) title += ", " + std::string(comm_group_name(op.group)) + " group of " + std::to_string(op.group_size);
      title += ", " + format_time_us(p.iv->end_us - p.iv->start_us) + " at " + format_time_us(p.iv->start_us - origin);
      title += ", mb " + std::to_string(op.microbatch) + " " + std::string(phase_name(op.phase));
      out += "<rect x=\"" + num(p.x0) + "\" y=\"" + num(y + 2) + "\" width=\"" + num(width_px) + "\" height=\"" + num(lane_h - 4) + "\" fill=\"" +
             std::string(op_kind_color(op.kind)) + "\"><title>" + html_escape(title) + "</title></rect>";
    };
    Merged merged;
    auto flush = [&]() {
      if (merged.count == 0) return;
      if (merged.count == 1) {  // a lone narrow op keeps its own title, drawn at the minimum width
        draw_op(*merged.first, options.min_op_width_px);
        merged = Merged{};
        return;
      }
      std::string kinds;
      for (const auto& [k, n] : merged.kinds) kinds += (kinds.empty() ? "" : ", ") + std::string(op_kind_name(k)) + " x" + std::to_string(n);
      // One kind: its color, lighter; several: grey.
      const std::string fill = merged.kinds.size() == 1 ? std::string(op_kind_color(merged.kinds.begin()->first)) + "\" fill-opacity=\"0.6" : "#888";
      out += "<rect class=\"merged\" x=\"" + num(merged.x0) + "\" y=\"" + num(y + 2) + "\" width=\"" + num(std::max(merged.x1 - merged.x0, options.min_op_width_px)) +
             "\" height=\"" + num(lane_h - 4) + "\" fill=\"" + fill + "\"><title>" + std::to_string(merged.count) + " short ops (" + html_escape(kinds) + ") from " +
             html_escape(format_time_us(merged.start_us - origin)) + " to " + html_escape(format_time_us(merged.end_us - origin)) + "</title></rect>";
      merged = Merged{};
    };
    for (const Placed& p : placed) {
      const Op& op = t.ops[p.iv->op];
      if (p.x1 - p.x0 < options.min_op_width_px) {
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

  // Memory: live bytes as a step curve, scaled to max(peak, capacity), with the capacity line.
  if (memory) {
    const double mem_h = options.memory_height_px;
    int64_t peak = 0;
    for (const MemorySample& m : t.memory) peak = std::max(peak, m.bytes);
    const double top_bytes = static_cast<double>(std::max<int64_t>({peak, t.memory_capacity_bytes, 1}));
    auto y_of = [&](int64_t bytes) { return mem_top + mem_h - static_cast<double>(bytes) / top_bytes * mem_h; };
    out += "<g class=\"memory\">";
    out += "<rect x=\"" + num(left) + "\" y=\"" + num(mem_top) + "\" width=\"" + num(plot_w) + "\" height=\"" + num(mem_h) + "\" fill=\"#fafafa\" stroke=\"#ddd\"/>";
    out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(mem_top + 12) + "\" text-anchor=\"end\">memory</text>";
    out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(mem_top + 26) + "\" text-anchor=\"end\">" + html_escape(format_bytes(static_cast<int64_t>(top_bytes))) + "</text>";
    // One step curve over the window; samples in the same pixel column keep the column's
    // entry level, its maximum and its exit level, so peaks survive decimation.
    std::string points;
    int64_t level = 0;
    bool have_level = false;
    const double x_end = left + plot_w;
    double col = -1;
    int64_t col_max = 0, col_last = 0;
    auto emit = [&](double x, int64_t bytes) { points += num(x) + "," + num(y_of(bytes)) + " "; };
    auto close_column = [&]() {
      if (col < 0) return;
      emit(col, col_max);
      emit(col, col_last);
    };
    for (const MemorySample& m : t.memory) {
      const double x = x_of(m.time_us);
      if (x < left) {
        level = m.bytes;
        have_level = true;
        continue;
      }
      if (x > x_end) break;
      if (points.empty()) emit(left, have_level ? level : m.bytes);
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
      if (points.empty()) emit(left, level);
      emit(x_end, level);
    }
    out += "<polyline fill=\"none\" stroke=\"#2a6fb0\" stroke-width=\"1.2\" points=\"" + points + "\"><title>live bytes (rank 0), peak " +
           html_escape(format_bytes(peak)) + "</title></polyline>";
    if (t.memory_capacity_bytes > 0) {
      const double cy = y_of(t.memory_capacity_bytes);
      out += "<line class=\"capacity\" x1=\"" + num(left) + "\" y1=\"" + num(cy) + "\" x2=\"" + num(x_end) + "\" y2=\"" + num(cy) +
             "\" stroke=\"#c0392b\" stroke-dasharray=\"6,3\"><title>capacity " + html_escape(format_bytes(t.memory_capacity_bytes)) + "</title></line>";
      const double limit = static_cast<double>(t.memory_capacity_bytes) * (1.0 - t.memory_margin);
      const double ly = mem_top + mem_h - limit / top_bytes * mem_h;
      out += "<line class=\"limit\" x1=\"" + num(left) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(x_end) + "\" y2=\"" + num(ly) +
             "\" stroke=\"#e67e22\" stroke-dasharray=\"2,3\"><title>capacity less the " + num(t.memory_margin * 100) + "% margin: " +
             html_escape(format_bytes(static_cast<int64_t>(limit))) + "</title></line>";
    }
    out += "</g>";
  }
  out += "</svg>";
  return out;
}

}  // namespace shardline
