#include "reports/outputs.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <system_error>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/program_json.h"
#include "core/units.h"
#include "reports/html.h"
#include "reports/throughput_text.h"
#include "reports/trace.h"

namespace shardline {

namespace fs = std::filesystem;

namespace {

std::string printf_line(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_line(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return std::string(buf) + "\n";
}

std::string percent(double part, double whole) {
  if (whole <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * part / whole);
  return buf;
}

std::string reshard_text(const ReshardAfterForward& r) {
  switch (r.mode) {
    case ReshardAfterForward::Mode::Full: return "true";
    case ReshardAfterForward::Mode::Keep: return "false";
    case ReshardAfterForward::Mode::Partial: return std::to_string(r.group_size);
  }
  return "?";
}

const KindStats& stats_of(const Metrics& m, OpKind kind) {
  static const KindStats kEmpty;
  auto it = m.by_kind.find(std::string(op_kind_name(kind)));
  return it == m.by_kind.end() ? kEmpty : it->second;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError("--out", "cannot create " + path.string());
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw InputError("--out", "cannot write " + path.string());
}

}  // namespace

std::string summary_table(const Scenario& scenario, const Timeline& timeline, const Metrics& m) {
  const ClusterSpec& c = scenario.cluster;
  const PolicySpec& p = scenario.policy;
  std::string out;
  out += printf_line("%-20s %s (%s, %s)", "scenario", scenario.name.c_str(), timeline.source.c_str(), timeline.backend.c_str());
  out += printf_line("%-20s %d x %d %s, mesh shard %d x replicate %d", "cluster", c.nodes, c.gpus_per_node, c.gpu.name.c_str(),
                     scenario.mesh.shard, scenario.mesh.replicate);
  const std::string bucket = p.bucket_bytes > 0 ? format_bytes(p.bucket_bytes) : std::string("per unit");
  out += printf_line("%-20s fusion %s, zero-copy %s, bucket %s, reshard_after_forward %s, prefetch fwd %d / bwd %d", "policy",
                     p.comm_fusion ? "on" : "off", p.zero_copy ? "on" : "off", bucket.c_str(), reshard_text(p.reshard_after_forward).c_str(),
                     p.forward_prefetch, p.backward_prefetch);
  out += printf_line("%-20s param %s, reduce %s, micro-batches %d, grad sync %s", "", std::string(dtype_name(p.param_dtype)).c_str(),
                     std::string(dtype_name(p.reduce_dtype)).c_str(), p.micro_batches, p.grad_sync == GradSync::Every ? "every" : "last");
  out += "\n";

  const double step = m.step_time_us;
  auto row = [&](const char* label, double us, const std::string& note) {
    out += note.empty() ? printf_line("%-20s %12s", label, format_time_us(us).c_str())
                        : printf_line("%-20s %12s  %s", label, format_time_us(us).c_str(), note.c_str());
  };
  row("step time", step, "");
  row("  forward", m.forward_us, percent(m.forward_us, step));
  row("  backward", m.backward_us, percent(m.backward_us, step));
  row("compute busy", m.compute_busy_us, percent(m.compute_busy_us, step) + " of step");
  row("comm busy", m.comm_busy_us, percent(m.comm_busy_us, step) + " of step (union of collectives)");
  for (OpKind k : {OpKind::AllGather, OpKind::ReduceScatter, OpKind::AllReduce, OpKind::CopyIn, OpKind::CopyOut}) {
    const KindStats& ks = stats_of(m, k);
    const std::string label = "  " + std::string(op_kind_name(k));
    out += printf_line("%-20s %12s  %6d ops  %12s", label.c_str(), format_time_us(ks.busy_us).c_str(), ks.count, format_bytes(ks.bytes).c_str());
  }
  row("exposed comm", m.exposed_comm_us, percent(m.exposed_comm_us, step) + " of step (step - compute busy)");
  char eff[32];
  std::snprintf(eff, sizeof eff, "%.1f%%", 100.0 * m.overlap_efficiency);
  out += printf_line("%-20s %12s  %s", "overlap efficiency", eff, "1 - exposed / comm busy");

  // Throughput (docs/outputs.md "Throughput"): unknown values say which scenario key is missing.
  const Workload& w = timeline.workload;
  const Throughput& tp = m.throughput;
  auto rate_row = [&](const char* label, const std::optional<double>& v, std::string (*format)(double), ThroughputValue which,
                      const std::string& note) {
    if (v) out += printf_line("%-20s %12s  %s", label, format(*v).c_str(), note.c_str());
    else out += printf_line("%-20s %12s  %s", label, "n/a", throughput_unknown_reason(w, step, which).c_str());
  };
  const std::string gpus = std::to_string(w.gpus) + (w.gpus == 1 ? " GPU" : " GPUs");
  rate_row("tokens/s", tp.tokens_per_s, format_per_s, ThroughputValue::Tokens,
           "global: " + format_per_s(w.tokens_per_step) + " tokens per step / step time");
  rate_row("  per GPU", tp.tokens_per_s_per_gpu, format_per_s, ThroughputValue::Tokens, "over " + gpus);
  rate_row("samples/s", tp.samples_per_s, format_per_s, ThroughputValue::Samples,
           "global: " + format_per_s(w.samples_per_step) + " samples per step");
  rate_row("model TFLOP/s / GPU", tp.model_tflops_per_gpu, format_tflops, ThroughputValue::ModelFlops,
           "model FLOPs per step / step time / GPUs");
  rate_row("MFU", tp.mfu, format_utilisation, ThroughputValue::Mfu,
           "model FLOPs / (" + gpus + " x " + format_tflops(w.peak_flops_per_gpu / 1e12) + " TFLOP/s dense peak)");
  rate_row("HFU", tp.hfu, format_utilisation, ThroughputValue::Hfu, "the same with the recomputed FLOPs");

  if (timeline.memory.empty()) {
    out += printf_line("%-20s %12s  %s", "peak memory", "-", "not recorded by this timeline");
  } else {
    const int64_t limit = static_cast<int64_t>(static_cast<double>(m.memory_capacity_bytes) * (1.0 - timeline.memory_margin));
    out += printf_line("%-20s allocated %s, reserved (estimate) %s of %s (limit %s with %s margin)  %s", "peak memory",
                       format_bytes(m.peak_memory_bytes).c_str(), format_bytes(m.peak_reserved_bytes).c_str(),
                       format_bytes(m.memory_capacity_bytes).c_str(), format_bytes(limit).c_str(),
                       percent(timeline.memory_margin, 1.0).c_str(), m.fits_memory ? "fits" : "DOES NOT FIT");
  }
  return out;
}

void write_run_outputs(const std::string& dir, const Scenario& scenario, const Program& program, const Timeline& timeline,
                       const Metrics& metrics) {
  static std::atomic<int> counter{0};
  fs::path target = fs::path(dir).lexically_normal();
  if (target.empty()) throw InputError("--out", "empty output folder");
  if (!target.has_filename()) target = target.parent_path();
  std::error_code ec;
  if (fs::exists(target, ec) && !fs::is_directory(target, ec)) throw InputError("--out", target.string() + " exists and is not a folder");
  fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) throw InputError("--out", "cannot create " + parent.string() + ": " + ec.message());
  const fs::path tmp = parent / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec) throw InputError("--out", "cannot create " + tmp.string() + ": " + ec.message());

  const std::vector<UnitCompute> kernels = unit_breakdowns(scenario);
  const std::vector<std::pair<const char*, std::function<std::string()>>> files = {
      {"metrics.json", [&] { return metrics_to_json(metrics).dump(2) + "\n"; }},
      {"program.json", [&] { return program_to_json(program).dump(1) + "\n"; }},
      {"timeline.json", [&] { return timeline_to_json(timeline).dump() + "\n"; }},
      {"trace.json", [&] { return trace_to_json(timeline, &kernels).dump() + "\n"; }},
      {"report.html", [&] { return html_report(scenario, timeline, metrics); }},
  };
  try {
    for (const auto& [name, render] : files) write_file(tmp / name, render());
    if (!fs::exists(target)) {
      fs::rename(tmp, target);
    } else {
      for (const auto& [name, render] : files) fs::rename(tmp / name, target / name);
      fs::remove_all(tmp);
    }
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw InputError("--out", std::string("cannot write the run outputs: ") + e.what());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace shardline
