#include "reports/kernel_breakdown.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "reports/svg_timeline.h"
#include "reports/trace_time.h"
#include "core/invariant.h"

namespace shardline {

using nlohmann::json;

namespace {

const char* kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::Gemm: return "gemm";
    case KernelKind::Attention: return "attention";
    case KernelKind::Memory: return "memory";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

void kernel_rows(std::string& out, const char* phase, const std::vector<TimedKernel>& kernels, double total_us) {
  for (const TimedKernel& k : kernels) {
    out += "<tr><td>" + std::string(phase) + "</td><td>" + html_escape(k.name) + "</td><td>" + kind_name(k.kind) + "</td><td class=\"num\">" +
           fmt("%.1f", k.time_us) + "</td><td class=\"num\">" + fmt("%.1f%%", total_us > 0 ? 100.0 * k.time_us / total_us : 0.0) +
           "</td><td class=\"num\">" + fmt("%.2f", k.flops / 1e9) + "</td><td class=\"num\">" + fmt("%.1f", k.bytes / 1e6) + "</td><td>" +
           (k.flops == 0 ? "memory" : k.memory_bound ? "memory" : "compute") + "</td></tr>\n";
  }
}

}  // namespace

void for_each_kernel_trace_event(const Timeline& t, const std::vector<UnitCompute>& breakdowns, const std::function<void(json&&)>& emit) {
  if (t.source != "predicted") return;
  for (const OpInterval& iv : t.intervals) {
    const Op& op = t.ops.at(iv.op);
    if (op.kind != OpKind::Compute || op.unit < 0 || static_cast<size_t>(op.unit) >= breakdowns.size()) continue;
    const UnitCompute& unit = breakdowns[static_cast<size_t>(op.unit)];
    const bool backward = op.phase == Phase::Backward;
    const std::vector<TimedKernel>& kernels = backward ? unit.backward : unit.forward;
    const double predicted_us = backward ? unit.backward_us : unit.forward_us;
    if (kernels.empty() || !(predicted_us > 0)) continue;
    // Each kernel's share of the op's interval, its ends on the trace's nanosecond grid
    // (reports/trace_time.h): the first starts where the op starts, the last ends where it ends,
    // each where the one before ended.
    const double scale = (iv.end_us - iv.start_us) / predicted_us;
    const int64_t op_end_ns = trace_ns(iv.end_us);
    int64_t at_ns = trace_ns(iv.start_us);
    double kernel_us_before = 0;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const TimedKernel& k = kernels[i];
      kernel_us_before += k.time_us;
      const int64_t end_ns =
          i + 1 == kernels.size() ? op_end_ns : std::clamp(trace_ns(iv.start_us + kernel_us_before * scale), at_ns, op_end_ns);
      const double at = trace_us(at_ns), dur = trace_us(end_ns - at_ns);
      emit(json{{"ph", "X"},
                {"name", k.name},
                {"cat", "kernel"},
                {"pid", iv.rank},
                {"tid", static_cast<int>(op.stream)},
                {"ts", at},
                {"dur", dur},
                {"args",
                 {{"kind", kind_name(k.kind)},
                  {"flops", k.flops},
                  {"bytes", k.bytes},
                  {"kernel_us", k.time_us},
                  {"memory_bound", k.memory_bound},
                  {"launches", k.launches},
                  {"op", iv.op}}}});
      at_ns = end_ns;
    }
  }
}

std::string kernel_breakdown_html(const Scenario& s, const std::vector<UnitCompute>& breakdowns) {
  if (!s.model.transformer) return "";
  const bool some_checkpointed = s.model.transformer->checkpoint_every > 1;
  const bool any_recomputed = std::any_of(s.model.units.begin(), s.model.units.end(),
                                          [](const UnitSpec& u) { return u.checkpointing != Checkpointing::None; });
  std::string out = "<h2>Compute per unit (predicted kernels)</h2>\n<p class=\"note\">Each kernel is timed by a roofline on " +
                    html_escape(s.cluster.gpu.name) +
                    " (docs/compute-model.md): max(FLOPs / (peak x efficiency), bytes / (HBM bandwidth x memory efficiency)) + "
                    "launch. Per micro-batch; every block is the same" +
                    std::string(some_checkpointed ? " but for its checkpointing" : "") +
                    "." + std::string(any_recomputed ? " Backward lists the recomputed forward first." : "") + "</p>\n";
  const char* titles[] = {"", "embedding", "each block", "norm + output head"};
  const std::vector<size_t> rep = representative_units(s);  // one table per kind of unit
  for (size_t u = 0; u < s.model.units.size() && u < breakdowns.size(); ++u) {
    const UnitSpec& unit = s.model.units[u];
    const int part = static_cast<int>(unit.part);
    if (part == 0 || rep[u] != u) continue;
    std::string title = titles[part];
    if (some_checkpointed && unit.part == TransformerPart::Block)
      title = unit.checkpointing == Checkpointing::None
                  ? "each block not checkpointed"
                  : "each checkpointed block (1 in " + std::to_string(s.model.transformer->checkpoint_every) + ")";
    const UnitCompute& c = breakdowns[u];
    out += "<h3>" + title + ": forward " + fmt("%.1f", c.forward_us) + " us, backward " + fmt("%.1f", c.backward_us) +
           " us</h3>\n<table><tr><th>phase</th><th>kernel</th><th>kind</th><th>us</th><th>share</th><th>GFLOP</th><th>MB</th>"
           "<th>bound</th></tr>\n";
    kernel_rows(out, "forward", c.forward, c.forward_us);
    kernel_rows(out, "backward", c.backward, c.backward_us);
    out += "</table>\n";
  }
  return out;
}

}  // namespace shardline
