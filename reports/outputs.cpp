#include "reports/outputs.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string_view>
#include <system_error>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/program_json.h"
#include "core/schedule.h"
#include "core/units.h"
#include "core/variation_record.h"
#include "core/workload.h"
#include "reports/html.h"
#include "reports/memory_text.h"
#include "reports/throughput_text.h"
#include "reports/trace.h"
#include "core/invariant.h"

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
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

const KindStats& stats_of(const Metrics& m, OpKind kind) {
  static const KindStats kEmpty;
  auto it = m.by_kind.find(std::string(op_kind_name(kind)));
  return it == m.by_kind.end() ? kEmpty : it->second;
}

void write_file(const fs::path& path, const std::string& text, const std::string& flag) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(flag, "cannot create " + path.string());
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw InputError(flag, "cannot write " + path.string());
}

}  // namespace

std::string summary_table(const Scenario& scenario, const Timeline& timeline, const Metrics& m) {
  const ClusterSpec& c = scenario.cluster;
  const PolicySpec& p = scenario.policy;
  std::string out;
  out += printf_line("%-20s %s (%s, %s)", "scenario", scenario.name.c_str(), timeline.source.c_str(), timeline.backend.c_str());
  // The cluster's name (a preset's key): the same GPU has presets of different software, whose
  // chip numbers differ (h100-sxm-dgx: 2023's published runs; h100-sxm-dgx-torch2.11: PyTorch 2.11).
  const std::string cluster_name =
      c.name.empty() || c.name == c.gpu.name ? std::string() : " (" + c.name + (c.base_changed ? ", with changes" : "") + ")";
  out += printf_line("%-20s %d x %d %s%s, mesh shard %d x replicate %d", "cluster", c.nodes, c.gpus_per_node, c.gpu.name.c_str(),
                     cluster_name.c_str(), scenario.mesh.shard, scenario.mesh.replicate);
  const std::string bucket = p.bucket_bytes > 0 ? format_bytes(p.bucket_bytes) : std::string("per unit");
  out += printf_line("%-20s fusion %s, zero-copy %s, bucket %s, reshard_after_forward %s, prefetch fwd %d / bwd %d", "policy",
                     p.comm_fusion ? "on" : "off", p.zero_copy ? "on" : "off", bucket.c_str(), reshard_text(p.reshard_after_forward).c_str(),
                     p.forward_prefetch, p.backward_prefetch);
  out += printf_line("%-20s param %s, reduce %s, micro-batches %d, grad sync %s", "", std::string(dtype_name(p.param_dtype)).c_str(),
                     std::string(dtype_name(p.reduce_dtype)).c_str(), p.micro_batches, p.grad_sync == GradSync::Every ? "every" : "last");
  // The variation the run had (scenario and flags; recorded in timeline.json's "variation").
  if (!timeline.variation.empty()) out += std::string("variation") + std::string(12, ' ') + variation_text(timeline.variation) + "\n";
  out += "\n";

  const double step = m.step_time_us;
  auto row = [&](const char* label, double us, const std::string& note) {
    out += note.empty() ? printf_line("%-20s %12s", label, format_time_us(us).c_str())
                        : printf_line("%-20s %12s  %s", label, format_time_us(us).c_str(), note.c_str());
  };
  row("step time", step, "");
  row("  forward", m.forward_us, percent(m.forward_us, step));
  row("  backward", m.backward_us, percent(m.backward_us, step));
  row("host issue", m.host_issue_us, percent(m.host_issue_us, step) + " of step (step start to the last op issued)");
  if (m.host_launches > 0) {
    const double host_launch_us = scenario.cluster.host_launch_us;
    out += printf_line("%-20s %12s  %s", "  launches", std::to_string(m.host_launches).c_str(),
                       host_launch_us > 0 ? ("per step, as the Program counts them; x host_launch " + format_time_us(host_launch_us) + " = " +
                                             format_time_us(host_launch_us * static_cast<double>(m.host_launches)))
                                                .c_str()
                                          : "per step, as the Program counts them (cluster.host_launch: 0, the host's time not charged)");
  }
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
  out += printf_line("%-20s %12s  %s", "overlap efficiency", eff,
                     m.comm_busy_us > 0 ? "1 - exposed / comm busy"
                                        : "no communication to hide (1 by definition); exposed time is copies and host gaps");

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
  // A utilisation over 100% says why. Where counting the attention core at half (the causal
  // kernels' work) brings it within the peak, the convention is the cause: the model FLOPs count
  // the full seq_len x seq_len square (docs/outputs.md). Otherwise, or where a straggler's factor
  // below 1 speeds compute up, the predicted compute itself outruns the peak.
  const auto over_peak = [&](const std::optional<double>& v, double flops_per_step, bool recomputed) {
    if (!v || !(*v > 1.0)) return std::string();
    // A measured run cannot outrun its GPUs: its FLOPs, counted from the scenario, are not its own.
    if (timeline.source != "predicted")
      return std::string("; over 100%: more than the GPUs can do, so the scenario does not describe this run "
                         "(its GPU or peak_tflops, model shape, micro-batch size or param dtype)");
    const bool faster_compute = std::any_of(scenario.variation.stragglers.begin(), scenario.variation.stragglers.end(),
                                            [](const Straggler& st) { return st.compute_factor < 1.0; });
    if (scenario.model.transformer && flops_per_step > 0 && !faster_compute) {
      const double attention_share =
          transformer_attention_flops_per_token(scenario, recomputed) * w.tokens_per_step / flops_per_step;
      if (*v * (1.0 - attention_share / 2) <= 1.0)
        return std::string("; over 100%: attention is counted over the full seq x seq square, of which causal kernels do half");
    }
    return std::string("; over 100%: the predicted compute outruns the dense peak (compute factors below 1, or units' FLOPs "
                       "against their times)");
  };
  rate_row("MFU", tp.mfu, format_utilisation, ThroughputValue::Mfu,
           "model FLOPs / (" + gpus + " x " + format_tflops(w.peak_flops_per_gpu / 1e12) + " TFLOP/s dense peak)" +
               over_peak(tp.mfu, w.model_flops_per_step, false));
  rate_row("HFU", tp.hfu, format_utilisation, ThroughputValue::Hfu,
           "the same with the recomputed FLOPs" + over_peak(tp.hfu, w.hardware_flops_per_step, true));

  // "R of CAPACITY (limit L with M margin)  fits": a reserve against the GPU, as fits_memory judges it.
  const int64_t limit = static_cast<int64_t>(static_cast<double>(m.memory_capacity_bytes) * (1.0 - timeline.memory_margin));
  const auto against_gpu = [&](int64_t reserved_bytes) {
    return format_bytes(reserved_bytes) + " of " + format_bytes(m.memory_capacity_bytes) + " (limit " + format_bytes(limit) + " with " +
           percent(timeline.memory_margin, 1.0) + " margin)  " + (m.fits_memory ? "fits" : "DOES NOT FIT");
  };
  if (timeline.allocator_measured && timeline.memory.empty()) {
    // An imported run: the allocator's own peaks, from the trace; no markers to simulate from.
    // They are its metrics' memory (core/metrics.cpp), judged against the scenario's GPU if known.
    out += printf_line("%-20s allocated %s, reserved %s  %s", "peak memory", format_bytes(timeline.allocator_measured->peak_allocated_bytes).c_str(),
                       format_bytes(timeline.allocator_measured->peak_reserved_bytes).c_str(),
                       "measured by the run's caching allocator (the timeline holds no memory samples to count)");
    if (m.memory_capacity_bytes > 0)
      out += printf_line("%-20s with the scenario's CUDA context and NCCL buffers %s", "", against_gpu(m.peak_reserved_bytes).c_str());
  } else if (!m.memory_recorded) {
    out += printf_line("%-20s %12s  %s", "peak memory", "-", "not recorded by this timeline");
  } else {
    out += printf_line("%-20s allocated %s, reserved (estimate) %s", "peak memory", format_bytes(m.peak_memory_bytes).c_str(),
                       against_gpu(m.peak_reserved_bytes).c_str());
    // The part a framework's logged "reserved" memory is (the caching allocator's own segments).
    if (m.peak_allocator_reserved_bytes != m.peak_reserved_bytes) {
      out += printf_line("%-20s %s of it the caching allocator's (torch.cuda.max_memory_reserved), the rest the CUDA context "
                         "and NCCL buffers", "", format_bytes(m.peak_allocator_reserved_bytes).c_str());
    }
    if (!m.fits_memory) {
      // Over the margin's limit yet within the GPU by flushing: allocator_cache_flushes is about the
      // GPU itself (docs/outputs.md), and metrics.json says true; the text says so too.
      out += printf_line("%-20s needs at least %s reserved (the allocator at capacity), over the limit%s", "",
                         format_bytes(m.min_reserved_bytes).c_str(),
                         m.allocator_cache_flushes ? "; on the GPU without the margin it would fit only by the caching allocator "
                                                     "freeing its cache and retrying"
                                                   : "");
    } else if (m.allocator_cache_flushes) {
      out += printf_line("%-20s the caching allocator would keep more than the GPU holds: it fits by freeing its cache and "
                         "retrying (needs at least %s; num_alloc_retries > 0, slower steps)",
                         "", format_bytes(m.min_reserved_bytes).c_str());
    } else if (m.peak_reserved_bytes > limit) {
      // "fits" is judged on the least reserve (the allocator at capacity), which the line above
      // does not show: without this, an estimate over the limit stood beside "fits" unexplained.
      out += printf_line("%-20s the estimate is over the limit, but the step needs at least %s reserved (the allocator at "
                         "capacity), within it",
                         "", format_bytes(m.min_reserved_bytes).c_str());
    }
    // What the allocated peak holds (predictions): what to cut when it does not fit.
    if (m.memory_at_peak)
      out += std::string(21, ' ') + "allocated at the peak: " + memory_parts_text(*m.memory_at_peak) + "\n";
  }
  return out;
}

namespace {

// Refuses a Program over kMaxOutputOps, naming the key that made its ops: `writes` says what the
// command would write or build, `advice` what to do instead.
void refuse_ops_beyond_limit(const Scenario& scenario, const Program& program, double bytes_per_op, const std::string& writes,
                             const std::string& advice) {
  const int64_t ops = static_cast<int64_t>(program.ops.size());
  if (ops <= kMaxOutputOps) return;
  char gb[32];
  std::snprintf(gb, sizeof gb, "%.1f", static_cast<double>(ops) * bytes_per_op / 1e9);
  // Fewer micro-batches are named only when one micro-batch's ops would fit (70B with 1 MiB
  // buckets: 3.9 M ops in one micro-batch had named policy.micro_batches).
  const bool one_micro_batch_fits = ops / std::max(1, scenario.policy.micro_batches) <= kMaxOutputOps;
  throw InputError(program_size_key(scenario, one_micro_batch_fits), "this step has " + std::to_string(ops) + " ops; " + writes + " (about " +
                                                   std::string(gb) + " GB here), and stops at " + std::to_string(kMaxOutputOps) +
                                                   " ops; " + advice + ", or make fewer ops");
}

}  // namespace

void check_run_outputs_size(const Scenario& scenario, const Program& program) {
  refuse_ops_beyond_limit(scenario, program, kOutputBytesPerOp, "--out writes every op to program.json, timeline.json and trace.json",
                          "leave out --out (the summary and --json have every metric)");
}

void check_program_json_size(const Scenario& scenario, const Program& program) {
  refuse_ops_beyond_limit(scenario, program, kProgramJsonBytesPerOp, "--json builds the whole program.json in memory",
                          "leave out --json (the text form, one line per op, is written as it goes)");
}

namespace {

// What a signal handler may touch while an output folder is being written: fixed C strings
// and unlink / rmdir / rename, which are async-signal-safe. SIGINT, SIGTERM and SIGHUP
// during the write remove the temporary folder and end the process with the same signal.
struct PendingOutput {
  static constexpr int kMaxFiles = 8;
  char tmp_dir[4096] = {};
  char tmp_files[kMaxFiles][4096] = {};
  int files = 0;
};
PendingOutput g_pending;
volatile sig_atomic_t g_pending_active = 0;
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_pending_output(int sig) {
  if (g_pending_active) {
    for (int i = 0; i < g_pending.files; ++i) ::unlink(g_pending.tmp_files[i]);
    ::rmdir(g_pending.tmp_dir);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// ".NAME.tmp-<pid>-<n>" beside `target`: where an output is written before it is put in place.
fs::path temporary_sibling(const fs::path& target) {
  static std::atomic<int> counter{0};
  return target.parent_path() /
         ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
}

void copy_path(char (&dst)[4096], const fs::path& p, const std::string& flag) {
  const std::string s = p.string();
  if (s.size() >= sizeof dst) throw InputError(flag, "the output path is too long: " + s);
  std::memcpy(dst, s.c_str(), s.size() + 1);
}

// Installs the clean-up handlers for one temporary folder; restores the previous ones when
// the write ends (committed or failed).
class CleanupOnSignal {
 public:
  CleanupOnSignal(const fs::path& tmp, const std::vector<std::string>& names, const std::string& flag) {
    SHARDLINE_CHECK(names.size() <= PendingOutput::kMaxFiles, "more output files than the signal clean-up holds");
    copy_path(g_pending.tmp_dir, tmp, flag);
    g_pending.files = static_cast<int>(names.size());
    for (size_t i = 0; i < names.size(); ++i) copy_path(g_pending.tmp_files[i], tmp / names[i], flag);
    struct sigaction action {};
    action.sa_handler = remove_pending_output;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kCleanupSignals); ++i) ::sigaction(kCleanupSignals[i], &action, &previous_[i]);
    g_pending_active = 1;
  }
  ~CleanupOnSignal() {
    g_pending_active = 0;
    for (size_t i = 0; i < std::size(kCleanupSignals); ++i) ::sigaction(kCleanupSignals[i], &previous_[i], nullptr);
  }
  CleanupOnSignal(const CleanupOnSignal&) = delete;
  CleanupOnSignal& operator=(const CleanupOnSignal&) = delete;

 private:
  struct sigaction previous_[std::size(kCleanupSignals)] {};
};

// Blocks the clean-up signals for a scope: the commit (a handful of renames) is not split.
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kCleanupSignals) sigaddset(&set, sig);
    ::sigprocmask(SIG_BLOCK, &set, &previous_);
  }
  ~SignalsHeld() { ::sigprocmask(SIG_SETMASK, &previous_, nullptr); }

 private:
  sigset_t previous_{};
};

// Moves the new files from `tmp` into the existing folder `target`: the old versions go aside
// first (into tmp/.old), then the new ones in; any failure puts everything back, so the folder
// holds either all old files or all new ones. Other files in `target` are left alone.
// `stale`: files of an earlier run that this one does not write; set aside with the old
// versions, so they go on success and come back on failure.
void commit_into_existing(const fs::path& tmp, const fs::path& target, const std::vector<std::string>& names,
                          const std::vector<std::string>& stale) {
  const fs::path old = tmp / ".old";
  fs::create_directory(old);
  std::vector<std::string> moved_aside, moved_in;
  std::vector<std::string> aside = names;
  aside.insert(aside.end(), stale.begin(), stale.end());
  try {
    for (const auto& name : aside) {
      if (fs::exists(fs::symlink_status(target / name))) {
        fs::rename(target / name, old / name);
        moved_aside.push_back(name);
      }
    }
    for (const auto& name : names) {
      fs::rename(tmp / name, target / name);
      moved_in.push_back(name);
    }
  } catch (const fs::filesystem_error&) {
    std::error_code ec;
    for (const auto& name : moved_in) fs::rename(target / name, tmp / name, ec);
    for (const auto& name : moved_aside) fs::rename(old / name, target / name, ec);
    throw;
  }
}

}  // namespace

fs::path checked_output_folder(const std::string& dir, const std::string& flag) {
  fs::path target = fs::path(dir).lexically_normal();
  if (target.empty()) throw InputError(flag, "empty output folder");
  if (!target.has_filename() && target.has_parent_path() && target.parent_path() != target) target = target.parent_path();
  std::error_code ec;
  // The current folder, the root or a folder above the current one, however written ("/",
  // "$PWD", "../.."): not a folder of the run's own.
  const fs::path here = fs::weakly_canonical(fs::current_path(ec), ec);
  const fs::path full = fs::weakly_canonical(fs::absolute(target, ec), ec);
  const auto [end, at] = std::mismatch(full.begin(), full.end(), here.begin(), here.end());
  if (target.filename() == "." || target.filename() == ".." || !target.has_filename() || (!full.empty() && end == full.end())) {
    throw InputError(flag, "\"" + dir + "\" names the current folder or one above it; give a folder of its own, e.g. out/run");
  }
  if (fs::exists(target, ec) && !fs::is_directory(target, ec)) throw InputError(flag, target.string() + " exists and is not a folder");
  return target;
}

void write_output_folder(const std::string& dir, const std::vector<OutputFile>& files, const std::string& flag,
                         const std::vector<std::string>& stale) {
  const fs::path target = checked_output_folder(dir, flag);
  std::error_code ec;
  // An old file is set aside and removed at the commit; a folder of the same name is not ours to
  // remove (it was deleted with whatever it held).
  for (const auto& name : files)
    if (fs::is_directory(target / name.name, ec))
      throw InputError(flag, "\"" + (target / name.name).string() + "\" is a folder, where this run writes a file: move it away");
  for (const auto& name : stale)
    if (fs::is_directory(target / name, ec))
      throw InputError(flag, "\"" + (target / name).string() + "\" is a folder, where an earlier run's file is removed: move it away");
  fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) throw InputError(flag, "cannot create " + parent.string() + ": " + ec.message());
  const fs::path tmp = temporary_sibling(parent / target.filename());
  fs::remove_all(tmp, ec);
  // Named as the user's folder: the temporary sibling is ours (it is written, then renamed).
  if (!fs::create_directory(tmp, ec) || ec)
    throw InputError(flag, "cannot create \"" + target.string() + "\" (its folder " + parent.string() + " takes no new entry: " +
                               (ec ? ec.message() : std::string("it exists")) + ")");

  std::vector<std::string> names;
  for (const auto& file : files) names.push_back(file.name);
  try {
    const CleanupOnSignal cleanup(tmp, names, flag);
    // Test hook (tests/unit/reports/outputs_test.cpp): a signal arrives after this file is written.
    const char* signal_after = std::getenv("SHARDLINE_TEST_SIGNAL_AFTER_FILE");
    for (const auto& file : files) {
      write_file(tmp / file.name, file.render(), flag);
      if (signal_after != nullptr && file.name == signal_after) ::raise(SIGTERM);
    }
    const SignalsHeld held;
    if (!fs::exists(target)) fs::rename(tmp, target);
    else commit_into_existing(tmp, target, names, stale);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    // The system's reason, and the user's folder: not std::filesystem's text with our temporary paths.
    throw InputError(flag, "cannot write the outputs into \"" + target.string() + "\": " + e.code().message());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::remove_all(tmp, ec);  // the old versions set aside, when an existing folder was updated
}

void check_output_file(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs) {
  const fs::path target(path);
  std::error_code ec;
  if (path.empty()) throw InputError(flag, "give a file name");
  if (fs::is_directory(target, ec)) throw InputError(flag, "\"" + path + "\" is a folder; expected a file name");
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (fs::exists(parent, ec) && !fs::is_directory(parent, ec))
    throw InputError(flag, "cannot write \"" + path + "\": " + parent.string() + " is a file, not a folder");
  if (!fs::is_directory(parent, ec)) throw InputError(flag, "cannot write \"" + path + "\": the folder " + parent.string() + " does not exist");
  // The file is written beside its name and renamed over it: the folder must take new files.
  if (::access(parent.c_str(), W_OK | X_OK) != 0) throw InputError(flag, "cannot write \"" + path + "\": " + std::strerror(errno));
  // The file written is the name in its folder (write_file_atomically renames over the name: a
  // symlink there is replaced, not followed), so the folder is resolved and the name kept; an
  // input is the file its path leads to. A path that cannot be resolved is not compared.
  const fs::path folder = fs::canonical(parent, ec);
  if (ec) return;
  const fs::path written = folder / target.filename();
  for (const std::string& input : inputs) {
    if (input.empty()) continue;
    std::error_code in_ec;
    const fs::path read = fs::weakly_canonical(fs::absolute(input, in_ec), in_ec);
    if (!in_ec && read == written)
      throw InputError(flag, "\"" + path + "\" is also this command's input \"" + input + "\": writing it would destroy what it reads; "
                                                                                      "give another file");
  }
}

void write_file_atomically(const std::string& path, const std::string& text, const std::string& flag,
                           const std::function<void()>& before_replacing) {
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw InputError(flag, "\"" + path + "\" is a folder; expected a file name");
  const fs::path tmp = temporary_sibling(target);
  try {
    write_file(tmp, text, flag);
    if (before_replacing) before_replacing();
    fs::rename(tmp, target);
  } catch (const fs::filesystem_error& e) {
    fs::remove(tmp, ec);
    throw InputError(flag, "cannot write \"" + path + "\": " + e.code().message());
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
}

namespace {
constexpr std::string_view kPartialTimelinePrefix = "timeline.partial.rank";
constexpr std::string_view kRankReportPrefix = "error.rank";
}  // namespace

std::string partial_timeline_file(int rank) { return std::string(kPartialTimelinePrefix) + std::to_string(rank) + ".json"; }
std::string rank_report_file(int rank) { return std::string(kRankReportPrefix) + std::to_string(rank) + ".txt"; }
bool is_partial_timeline_file(const std::string& name) { return name.rfind(kPartialTimelinePrefix, 0) == 0; }
bool is_rank_report_file(const std::string& name) { return name.rfind(kRankReportPrefix, 0) == 0; }

void write_run_outputs(const std::string& dir, const Scenario& scenario, const Program& program, const Timeline& timeline,
                       const Metrics& metrics, const RankSummary* ranks, const Timeline* drawn) {
  check_run_outputs_size(scenario, program);
  const Timeline& picture = drawn ? *drawn : timeline;
  const std::vector<UnitCompute> kernels = unit_breakdowns(scenario);
  std::vector<OutputFile> files{
      {"metrics.json", [&] { return metrics_to_json(metrics).dump(2) + "\n"; }},
      {"program.json", [&] { return program_to_json(program).dump(1) + "\n"; }},
      {"timeline.json", [&] { return timeline_to_json(timeline).dump() + "\n"; }},
      {"trace.json", [&] { return trace_json_text(picture, &kernels) + "\n"; }},
      {"report.html", [&] { return html_report(scenario, picture, metrics, ranks ? rank_summary_html(*ranks) : std::string()); }}};
  if (ranks != nullptr) files.push_back({"ranks.json", [&] { return rank_summary_to_json(*ranks).dump(2) + "\n"; }});
  // Files of an earlier run there that would sit beside these and describe another run: a
  // ranks.json of an every-rank run, a failed exec's partial timelines and rank reports, a
  // compare of the earlier run (compare writes into MEASURED_DIR by default), and a sweep's table.
  std::vector<std::string> stale = kSweepOnlyFiles;  // a sweep's, when this folder held one
  if (ranks == nullptr) stale.push_back("ranks.json");
  const std::vector<std::string> earlier = earlier_run_files_in(dir);
  stale.insert(stale.end(), earlier.begin(), earlier.end());
  write_output_folder(dir, files, "--out", stale);
}

std::vector<std::string> earlier_run_files_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (is_partial_timeline_file(name) || is_rank_report_file(name) || name == "compare.json" || name == "compare.html")
      names.push_back(name);
  }
  return names;
}

std::string path_component(const std::string& text) {
  constexpr size_t kMaxBytes = 100;  // well inside NAME_MAX (255) with a prefix such as "validate-"
  std::string out;
  for (const char c : text.substr(0, kMaxBytes)) {
    const bool safe = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out += safe ? c : '_';
  }
  if (out.empty()) out = "_";
  if (out == "." || out == "..") out = std::string(out.size(), '_');
  return out;
}

}  // namespace shardline
