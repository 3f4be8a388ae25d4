#include "kineto/program_mapping.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <type_traits>
#include <sstream>
#include <map>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/units.h"
#include "kineto/allocator_peaks.h"
#include "kineto/launch_index.h"
#include "core/invariant.h"

namespace shardline::kineto {
namespace {

constexpr int64_t kNone = INT64_MIN;

// An `FSDP::<label> (<fqn>)` range split into its label and module FQN.
struct FsdpRange {
  int64_t ts_ns = 0, end_ns = 0, tid = 0;
  std::string label;  // "FSDP::pre_forward"
  std::string fqn;    // "layers.3" ("" when none)
  int index = 0;      // position in the trace's range list: identifies the occurrence
};

FsdpRange split_range(const KinetoTrace& t, const CpuRange& r, int index) {
  FsdpRange f{r.ts_ns, r.end_ns(), r.tid, t.name_of(r), "", index};
  const size_t open = f.label.find(" (");
  if (open != std::string::npos) {
    const size_t close = f.label.rfind(')');
    if (close != std::string::npos && close > open) f.fqn = f.label.substr(open + 2, close - open - 2);
    f.label.resize(open);
  }
  return f;
}

// A unit's forward or backward compute window on one CPU thread: from the end of its opening
// range to the start of its closing one; `open_ns` and `close_end_ns` are the opening range's start
// and the closing range's end (a root window's parts stop there, docs/import.md).
struct Window {
  int64_t ts_ns = 0, end_ns = 0;
  Phase phase = Phase::Forward;
  int unit = -1;
  int64_t open_ns = 0, close_end_ns = 0;
  // Windows of one group_ns make one op: a root window's part and the loss beside it.
  int64_t group_ns = 0;
};

// The root module's window (`fully_shard(model)`: ranges without an FQN) on one CPU thread.
struct RootWindow {
  int64_t ts_ns = 0, end_ns = 0;
  Phase phase = Phase::Forward;
  int64_t tid = 0;
  int64_t open_ns = 0, close_end_ns = 0;
};

// GPU work launched in this range (not in a range nested in it) is a unit's unshard: with one rank
// FSDP2 gathers nothing and casts each parameter to the compute dtype there.
bool is_unshard_range(const std::string& label) {
  return label == "FSDP::pre_forward" || label == "FSDP::pre_backward" || label.rfind("FSDP::forward_prefetch", 0) == 0 ||
         label.rfind("FSDP::backward_prefetch", 0) == 0;
}

// The Program's unit for a module FQN: its exact name, or a name the FQN ends with after a dot.
int unit_of(const Program& p, const std::string& fqn) {
  for (size_t u = 0; u < p.units.size(); ++u)
    if (fqn == p.units[u]) return static_cast<int>(u);
  for (size_t u = 0; u < p.units.size(); ++u) {
    const std::string& n = p.units[u];
    if (fqn.size() > n.size() && fqn.compare(fqn.size() - n.size(), n.size(), n) == 0 && fqn[fqn.size() - n.size() - 1] == '.')
      return static_cast<int>(u);
  }
  return -1;
}

// What one trace group or Program op is matched by: a sequence and a key within it.
enum class Seq : uint8_t { Compute, AgCopyIn, RsCopyIn, CopyOut, Collective, Finalize };

// End-of-step compute (phase finalize) by name: 0 gradient clipping, 1 the optimizer step, -1 other.
int finalize_index(std::string_view name) {
  if (name.find("clip_grad_norm") != std::string_view::npos) return 0;
  if (name.rfind("optimizer_step", 0) == 0 || name.rfind("Optimizer.step#", 0) == 0) return 1;
  return -1;
}

struct SeqKey {
  Seq seq = Seq::Compute;
  int a = 0, b = 0, c = 0;  // compute: phase, unit, micro-batch; collective: kind, group
  bool operator<(const SeqKey& o) const { return std::tie(seq, a, b, c) < std::tie(o.seq, o.a, o.b, o.c); }
};

std::string describe(const Program& p, const SeqKey& k) {
  switch (k.seq) {
    case Seq::Compute:
      return std::string(phase_name(static_cast<Phase>(k.a))) + " compute of " +
             (k.b >= 0 && k.b < static_cast<int>(p.units.size()) ? p.units[static_cast<size_t>(k.b)] : "?") + " mb" + std::to_string(k.c);
    case Seq::AgCopyIn: return "all-gather copy-ins";
    case Seq::RsCopyIn: return "reduce-scatter copy-ins";
    case Seq::CopyOut: return "copy-outs";
    case Seq::Finalize: return k.a == 0 ? "gradient clippings (clip_grad_norm)" : k.a == 1 ? "optimizer steps" : "end-of-step computes";
    case Seq::Collective:
      return std::string(comm_kind_name(static_cast<CommKind>(k.a))) + "s over " + p.groups[static_cast<size_t>(k.b)].name + "(" +
             std::to_string(p.groups[static_cast<size_t>(k.b)].size) + ")";
  }
  SHARDLINE_UNREACHABLE("an enum value outside its type");
}

CommKind comm_kind_of(OpKind k) {
  return k == OpKind::AllGather ? CommKind::AllGather : k == OpKind::ReduceScatter ? CommKind::ReduceScatter : CommKind::AllReduce;
}

// The Program's ops of one iteration by sequence key, in program order; markers apart.
struct ProgramSeqs {
  std::map<SeqKey, std::vector<int>> ops;
  std::vector<std::vector<int>> groups_by_kind = std::vector<std::vector<int>>(4);  // by CommKind
};

ProgramSeqs program_seqs(const Program& p) {
  ProgramSeqs s;
  for (const Op& op : p.ops) {
    switch (op.kind) {
      case OpKind::Alloc:
      case OpKind::Free: break;
      case OpKind::Compute:
        if (op.phase == Phase::Finalize) s.ops[{Seq::Finalize, finalize_index(p.name(op)), 0, 0}].push_back(p.id_of(op));
        else s.ops[{Seq::Compute, static_cast<int>(op.phase), op.unit, op.microbatch}].push_back(p.id_of(op));
        break;
      case OpKind::CopyIn: {
        const OpKind target = op.link >= 0 ? p.ops[static_cast<size_t>(op.link)].kind : OpKind::Compute;
        s.ops[{target == OpKind::AllGather ? Seq::AgCopyIn : Seq::RsCopyIn, 0, 0, 0}].push_back(p.id_of(op));
        break;
      }
      case OpKind::CopyOut: s.ops[{Seq::CopyOut, 0, 0, 0}].push_back(p.id_of(op)); break;
      case OpKind::AllGather:
      case OpKind::ReduceScatter:
      case OpKind::AllReduce: {
        const int kind = static_cast<int>(comm_kind_of(op.kind));
        s.ops[{Seq::Collective, kind, static_cast<int>(op.group), 0}].push_back(p.id_of(op));
        auto& groups = s.groups_by_kind[static_cast<size_t>(kind)];
        if (std::find(groups.begin(), groups.end(), static_cast<int>(op.group)) == groups.end()) groups.push_back(static_cast<int>(op.group));
        break;
      }
    }
  }
  return s;
}

// One trace group: the GPU activities that make one op.
struct Group {
  int64_t first_launch_ns = INT64_MAX, start_ns = INT64_MAX, end_ns = INT64_MIN;
  int64_t order_ns = INT64_MAX;  // sort key (the range occurrence's start, else first launch)
  int collective = -1;           // the NCCL kernel's metadata (collectives)
  void add(int64_t launch, const GpuActivity& a) {
    first_launch_ns = std::min(first_launch_ns, launch);
    start_ns = std::min(start_ns, a.ts_ns);
    end_ns = std::max(end_ns, a.end_ns());
  }
};

struct OpTimesNs {
  int64_t issue = kNone, start = kNone, end = kNone;
};

// What one rank's step contributes to the report's counts (added only for imported steps).
struct StepTally {
  std::map<std::string, NotInProgram> not_in_program;
  int64_t markers_from_memory_events = 0, markers_from_stream_order = 0, collectives_without_sizes = 0;
  int64_t ops_without_gpu_work = 0;
};

// One rank's trace, indexed for the mapping.
class RankMapper {
 public:
  RankMapper(const KinetoTrace& t, const Program& p, const ProgramSeqs& seqs, int rank, ImportReport& report)
      : t_(t), p_(p), seqs_(seqs), rank_(rank), report_(report), launches_(t), steps_(profiler_steps(t)) {
    for (size_t i = 0; i < t.ranges.size(); ++i) {
      const std::string& name = t.name_of(t.ranges[i]);
      if (name.rfind("ProfilerStep#", 0) != 0) ranges_[t.ranges[i].tid].push_back(split_range(t, t.ranges[i], static_cast<int>(i)));
    }
    for (auto& [tid, list] : ranges_) {
      // By start; of two that start together the longer (outer) first, so that a backward walk
      // meets the inner one first.
      std::stable_sort(list.begin(), list.end(), [](const FsdpRange& a, const FsdpRange& b) {
        return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.end_ns > b.end_ns;
      });
      build_windows(list);
      range_reach_[tid] = reach(list);
    }
    add_root_windows();
    for (auto& [tid, list] : windows_) {
      std::stable_sort(list.begin(), list.end(), [](const Window& a, const Window& b) {
        return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.end_ns > b.end_ns;
      });
      window_reach_[tid] = reach(list);
    }
    // The markers are the GPU's: a host allocation of the same size ("Device Type" 0) must not
    // place one. An event that names no device (older profilers) is kept.
    for (const MemoryEvent& e : t.memory)
      if (e.device_type < 0 || e.device_type == MemoryEvent::kCudaDeviceType) memory_.push_back(e);
    gpu_allocator_ = gpu_allocator_events(t.memory);
    std::stable_sort(memory_.begin(), memory_.end(), [](const MemoryEvent& a, const MemoryEvent& b) { return a.ts_ns < b.ts_ns; });
    by_step_.resize(steps_.size());
    for (size_t i = 0; i < t.gpu.size(); ++i) {
      const int w = step_of(steps_, launches_.launch_ns(t.gpu[i]));
      if (!launches_.has_launch(t.gpu[i])) ++report_.gpu_activities_without_launch;
      if (w < 0) ++report_.gpu_activities_outside_steps;
      else by_step_[static_cast<size_t>(w)].push_back(static_cast<int>(i));
    }
  }

  const std::vector<ProfilerStepWindow>& steps() const { return steps_; }

  // Matches step `w`: fills `times` (indexed by op id, markers left kNone) or returns why not.
  std::string match_step(size_t w, std::vector<OpTimesNs>& times, StepTally& tally) {
    std::map<std::string, NotInProgram>& extra = tally.not_in_program;
    std::map<SeqKey, std::vector<Group>> found;
    std::map<int, Group> occurrence_groups;  // range occurrence -> group (copy-ins, copy-outs)
    std::map<int, SeqKey> occurrence_seq;
    struct Reduce {
      int64_t first_nccl_launch = INT64_MAX;
      std::vector<std::pair<int64_t, int>> kernels;  // (launch, activity)
    };
    std::map<int, Reduce> reduces;  // post_backward_reduce occurrence -> its non-NCCL work
    std::map<std::tuple<int, int, int64_t>, Group> compute_windows;  // (phase, unit, window start) -> its work

    for (int i : by_step_[w]) {
      const GpuActivity& a = t_.gpu[static_cast<size_t>(i)];
      const int64_t launch = launches_.launch_ns(a);
      const int64_t tid = launches_.launch_tid(a);
      if (const CollectiveInfo* c = t_.collective_of(a)) {
        const FsdpRange* r = innermost(tid, launch, "FSDP::post_backward_reduce");
        if (r) {
          Reduce& red = reduces[r->index];
          red.first_nccl_launch = std::min(red.first_nccl_launch, launch);
        }
        if (c->kind == CommKind::Other) {
          add_extra(extra, "NCCL " + c->name + " kernels", a);
          continue;
        }
        const int group = group_of(*c);
        if (group < 0) {
          add_extra(extra, std::string("NCCL ") + std::string(comm_kind_name(c->kind)) + " kernels over a communicator the Program does not use", a);
          continue;
        }
        Group g;
        g.add(launch, a);
        g.order_ns = launch;
        g.collective = a.collective;
        found[{Seq::Collective, static_cast<int>(c->kind), group, 0}].push_back(g);
        continue;
      }
      const FsdpRange* r = innermost(tid, launch, nullptr);
      if (r && r->label == "FSDP::all_gather_copy_in") {
        add_to_occurrence(occurrence_groups, occurrence_seq, *r, {Seq::AgCopyIn, 0, 0, 0}, launch, a);
        continue;
      }
      if (r && (r->label == "FSDP::all_gather_copy_out" || (p_.world_size == 1 && is_unshard_range(r->label)))) {
        add_to_occurrence(occurrence_groups, occurrence_seq, *r, {Seq::CopyOut, 0, 0, 0}, launch, a);
        continue;
      }
      if (r && r->label.rfind("FSDP::", 0) != 0) {  // Optimizer.step#..., ...clip_grad_norm...
        add_to_occurrence(occurrence_groups, occurrence_seq, *r, {Seq::Finalize, finalize_index(r->label), 0, 0}, launch, a);
        continue;
      }
      if (const FsdpRange* red = innermost(tid, launch, "FSDP::post_backward_reduce")) {
        reduces[red->index].kernels.emplace_back(launch, i);
        continue;
      }
      const Window* win = window_at(tid, launch);
      if (!win) {
        add_extra(extra, "GPU work outside every FSDP unit window", a);
        continue;
      }
      Group& g = compute_windows[{static_cast<int>(win->phase), win->unit, win->group_ns}];
      g.add(launch, a);
      g.order_ns = win->group_ns;
    }
    for (auto& [index, red] : reduces) {
      Group g;
      bool any = false;
      for (const auto& [launch, i] : red.kernels) {
        const GpuActivity& a = t_.gpu[static_cast<size_t>(i)];
        if (launch < red.first_nccl_launch) {
          g.add(launch, a);
          g.order_ns = std::min(g.order_ns, launch);
          any = true;
        } else {
          add_extra(extra, "GPU work after the reduce-scatter in FSDP::post_backward_reduce", a);
        }
      }
      if (any) found[{Seq::RsCopyIn, 0, 0, 0}].push_back(g);
    }
    for (auto& [index, g] : occurrence_groups) found[occurrence_seq[index]].push_back(g);
    // A unit's k-th window of a phase in the step, in time order (the map's), is micro-batch k.
    int k = 0;
    std::pair<int, int> previous{-1, -1};
    for (const auto& [key, g] : compute_windows) {
      const auto& [phase, unit, start] = key;
      k = std::pair{phase, unit} == previous ? k + 1 : 0;
      previous = {phase, unit};
      found[{Seq::Compute, phase, unit, k}].push_back(g);
    }
    for (auto& [key, list] : found)
      std::stable_sort(list.begin(), list.end(), [](const Group& a, const Group& b) { return a.order_ns < b.order_ns; });

    // Every Program sequence against the trace's.
    for (const auto& [key, ops] : seqs_.ops) {
      const auto it = found.find(key);
      const size_t have = it == found.end() ? 0 : it->second.size();
      // With one rank FSDP2 launches no collective and no all-gather copy-in: those ops are
      // placed without GPU work (place_markers).
      if (have == 0 && p_.world_size == 1 && (key.seq == Seq::Collective || key.seq == Seq::AgCopyIn)) continue;
      if (have != ops.size())
        return "the Program has " + std::to_string(ops.size()) + " " + describe(p_, key) + ", the trace " + std::to_string(have);
      for (size_t k = 0; k < ops.size(); ++k) {
        const Group& g = it->second[k];
        const Op& op = p_.ops[static_cast<size_t>(ops[k])];
        if (g.collective >= 0) {
          const std::string why = check_size(op, p_.group_size(op), t_.collectives[static_cast<size_t>(g.collective)], tally);
          if (!why.empty()) return p_.name(op) + ": " + why;
        }
        times[static_cast<size_t>(ops[k])] = OpTimesNs{g.first_launch_ns, g.start_ns, g.end_ns};
      }
    }
    for (const auto& [key, list] : found) {
      if (seqs_.ops.count(key)) continue;
      return "the trace has " + std::to_string(list.size()) + " " + describe(p_, key) + ", the Program none";
    }
    return "";
  }

  // What the allocator held over step w (kineto/allocator_peaks.h).
  std::optional<AllocatorPeaks> allocator_peaks_in(size_t w) const { return allocator_peaks(gpu_allocator_, steps_[w].ts_ns, steps_[w].end_ns); }

  // The step's [memory] events, in time order.
  std::vector<MemoryEvent> memory_in(size_t w) const {
    const auto by_time = [](const MemoryEvent& m, int64_t t) { return m.ts_ns < t; };
    const auto first = std::lower_bound(memory_.begin(), memory_.end(), steps_[w].ts_ns, by_time);
    const auto last = std::lower_bound(first, memory_.end(), steps_[w].end_ns, by_time);
    return {first, last};
  }

 private:
  void add_extra(std::map<std::string, NotInProgram>& extra, const std::string& what, const GpuActivity& a) {
    NotInProgram& n = extra[what];
    ++n.count;
    n.gpu_us += static_cast<double>(a.dur_ns) / 1000.0;
  }

  void add_to_occurrence(std::map<int, Group>& groups, std::map<int, SeqKey>& seq, const FsdpRange& r, SeqKey key,
                         int64_t launch, const GpuActivity& a) {
    Group& g = groups[r.index];
    g.add(launch, a);
    g.order_ns = std::min(g.order_ns, r.ts_ns);
    seq[r.index] = key;
  }

  // For ranges sorted by start: the latest end among the first i + 1, so that a backward walk
  // stops once no earlier range can still be open.
  template <class T>
  static std::vector<int64_t> reach(const std::vector<T>& list) {
    std::vector<int64_t> out(list.size());
    int64_t r = INT64_MIN;
    for (size_t i = 0; i < list.size(); ++i) out[i] = r = std::max(r, list[i].end_ns);
    return out;
  }

  // The innermost (latest-starting) of `list` that holds time `ns`, whose label is `label` when given.
  template <class T>
  static const T* innermost_of(const std::vector<T>& list, const std::vector<int64_t>& reach, int64_t ns, const char* label) {
    auto pos = std::upper_bound(list.begin(), list.end(), ns, [](int64_t t, const T& r) { return t < r.ts_ns; });
    while (pos != list.begin()) {
      --pos;
      if (reach[static_cast<size_t>(pos - list.begin())] <= ns) return nullptr;  // every earlier one ended
      if constexpr (std::is_same_v<T, FsdpRange>) {
        if (ns < pos->end_ns && (!label || pos->label == label)) return &*pos;
      } else {
        if (ns < pos->end_ns) return &*pos;
      }
    }
    return nullptr;
  }

  // The innermost FSDP (or end-of-step) range holding CPU time `ns` on thread `tid`, of label
  // `label` when given.
  const FsdpRange* innermost(int64_t tid, int64_t ns, const char* label) const {
    const auto it = ranges_.find(tid);
    return it == ranges_.end() ? nullptr : innermost_of(it->second, range_reach_.at(tid), ns, label);
  }

  const Window* window_at(int64_t tid, int64_t ns) const {
    const auto it = windows_.find(tid);
    return it == windows_.end() ? nullptr : innermost_of(it->second, window_reach_.at(tid), ns, nullptr);
  }

  // Per module FQN, in time order: each pre_forward closed by the next post_forward, each
  // pre_backward by the next post_backward_*.
  void build_windows(const std::vector<FsdpRange>& list) {
    std::map<std::string, std::vector<const FsdpRange*>> by_fqn;  // ordered: windows added in one order on every run
    for (const FsdpRange& r : list)
      if (!r.fqn.empty() || r.label.rfind("FSDP::pre_", 0) == 0 || r.label.rfind("FSDP::post_", 0) == 0) by_fqn[r.fqn].push_back(&r);
    for (const auto& [fqn, ranges] : by_fqn) {
      const int unit = unit_of(p_, fqn);
      const FsdpRange* open_forward = nullptr;
      const FsdpRange* open_backward = nullptr;
      for (const FsdpRange* r : ranges) {
        if (r->label == "FSDP::pre_forward") {
          open_forward = r;
        } else if (r->label == "FSDP::pre_backward") {
          open_backward = r;
        } else if (r->label == "FSDP::post_forward" && open_forward) {
          add_window(*open_forward, *r, Phase::Forward, unit);
          open_forward = nullptr;
        } else if (r->label.rfind("FSDP::post_backward", 0) == 0 && open_backward) {
          add_window(*open_backward, *r, Phase::Backward, unit);
          open_backward = nullptr;
        }
      }
    }
  }

  void add_window(const FsdpRange& open, const FsdpRange& close, Phase phase, int unit) {
    if (unit >= 0) windows_[open.tid].push_back(Window{open.end_ns, close.ts_ns, phase, unit, open.ts_ns, close.end_ns, open.end_ns});
    else if (open.fqn.empty()) root_windows_.push_back(RootWindow{open.end_ns, close.ts_ns, phase, open.tid, open.ts_ns, close.end_ns});
    else ++unknown_units_[open.fqn];
  }

  // The root module's windows hold its units' compute around the inner units' windows. The root's
  // units are those no range of the trace names: in each phase, the one the Program runs before
  // every named unit takes the root window's work before the first inner window, the one it runs
  // after them the work after the last (the embedding and the head, in forward; the other way
  // round in backward). Parts no such unit takes stay outside every window. The loss runs between
  // the root's forward and backward windows: its forward on the forward's thread, its backward on
  // autograd's thread before the root's pre-backward hook; the Program's head includes it in its
  // forward and backward, so they take it (when the two threads differ: one thread cannot tell
  // the two apart).
  void add_root_windows() {
    if (root_windows_.empty()) return;
    std::vector<bool> named(p_.units.size(), false);
    for (const auto& [tid, list] : ranges_)
      for (const FsdpRange& r : list)
        if (const int u = r.fqn.empty() ? -1 : unit_of(p_, r.fqn); u >= 0) named[static_cast<size_t>(u)] = true;
    struct Ends {
      int leading = -1, trailing = -1;
    };
    std::map<Phase, Ends> ends;
    for (const Phase phase : {Phase::Forward, Phase::Backward}) {
      std::vector<int> order;  // units in the order of their first compute of the phase
      for (const Op& op : p_.ops)
        if (op.kind == OpKind::Compute && op.phase == phase && op.unit >= 0 && std::find(order.begin(), order.end(), op.unit) == order.end())
          order.push_back(op.unit);
      const auto is_named = [&](int u) { return named[static_cast<size_t>(u)]; };
      const auto first_named = std::find_if(order.begin(), order.end(), is_named);
      if (first_named == order.end()) {  // no inner unit: one root unit takes the whole window
        if (order.size() == 1) ends[phase] = Ends{order[0], order[0]};
        continue;
      }
      const auto last_named = std::find_if(order.rbegin(), order.rend(), is_named).base();  // one past it
      if (first_named - order.begin() == 1) ends[phase].leading = order.front();
      if (order.end() - last_named == 1) ends[phase].trailing = order.back();
    }
    // The inner windows by thread, in the order they open: a root window looks only at those that
    // open inside it (a pass over every window for each root window grows with the steps squared).
    struct Inner {
      int64_t open_ns = 0, close_end_ns = 0;
      Phase phase = Phase::Forward;
    };
    std::unordered_map<int64_t, std::vector<Inner>> inner;
    for (const auto& [tid, list] : windows_) {
      std::vector<Inner>& v = inner[tid];
      for (const Window& w : list) v.push_back(Inner{w.open_ns, w.close_end_ns, w.phase});
      std::sort(v.begin(), v.end(), [](const Inner& a, const Inner& b) { return a.open_ns < b.open_ns; });
    }
    for (const RootWindow& root : root_windows_) {
      int64_t first_open = INT64_MAX, last_close = INT64_MIN;
      const std::vector<Inner>& candidates = inner[root.tid];
      auto w = std::lower_bound(candidates.begin(), candidates.end(), root.ts_ns, [](const Inner& x, int64_t t) { return x.open_ns < t; });
      for (; w != candidates.end() && w->open_ns <= root.end_ns; ++w)
        if (w->phase == root.phase && w->close_end_ns <= root.end_ns) {
          first_open = std::min(first_open, w->open_ns);
          last_close = std::max(last_close, w->close_end_ns);
        }
      std::vector<Window>& list = windows_[root.tid];
      const Ends e = ends.count(root.phase) ? ends[root.phase] : Ends{};
      if (first_open == INT64_MAX) {
        if (e.leading >= 0 && e.leading == e.trailing)
          list.push_back(Window{root.ts_ns, root.end_ns, root.phase, e.leading, root.ts_ns, root.end_ns, root.ts_ns});
        else ++unknown_units_[""];
        continue;
      }
      if (e.leading >= 0) list.push_back(Window{root.ts_ns, first_open, root.phase, e.leading, root.ts_ns, first_open, root.ts_ns});
      if (e.trailing >= 0) list.push_back(Window{last_close, root.end_ns, root.phase, e.trailing, last_close, root.end_ns, root.ts_ns});
      if (e.leading < 0 && e.trailing < 0) ++unknown_units_[""];
    }
    // The loss: each root backward window after the latest root forward window that closed before it.
    const int head_forward = ends.count(Phase::Forward) ? ends[Phase::Forward].trailing : -1;
    const int head_backward = ends.count(Phase::Backward) ? ends[Phase::Backward].leading : -1;
    std::vector<const RootWindow*> forwards;  // by the end of their closing range
    for (const RootWindow& w : root_windows_)
      if (w.phase == Phase::Forward) forwards.push_back(&w);
    std::stable_sort(forwards.begin(), forwards.end(), [](const RootWindow* a, const RootWindow* b) { return a->close_end_ns < b->close_end_ns; });
    for (const RootWindow& backward : root_windows_) {
      if (backward.phase != Phase::Backward) continue;
      const auto after = std::upper_bound(forwards.begin(), forwards.end(), backward.open_ns,
                                          [](int64_t t, const RootWindow* w) { return t < w->close_end_ns; });
      if (after == forwards.begin()) continue;
      const RootWindow* forward = *(after - 1);
      if (forward->tid == backward.tid) continue;
      if (head_forward >= 0)
        windows_[forward->tid].push_back(
            Window{forward->close_end_ns, backward.open_ns, Phase::Forward, head_forward, forward->close_end_ns, backward.open_ns, forward->ts_ns});
      if (head_backward >= 0)
        windows_[backward.tid].push_back(
            Window{forward->close_end_ns, backward.open_ns, Phase::Backward, head_backward, forward->close_end_ns, backward.open_ns, backward.ts_ns});
    }
  }

  int group_of(const CollectiveInfo& c) const {
    const auto& candidates = seqs_.groups_by_kind[static_cast<size_t>(c.kind)];
    if (!c.group_ranks.empty()) {
      const std::set<int> ranks(c.group_ranks.begin(), c.group_ranks.end());
      for (int g : candidates) {
        const GroupInfo& info = p_.groups[static_cast<size_t>(g)];
        std::set<int> members;
        for (int i = 0; i < info.size; ++i) members.insert(info.member(rank_, i));
        if (members == ranks) return g;
      }
      return -1;
    }
    int match = -1, matches = 0;
    for (int g : candidates) {
      if (c.group_size < 0 || p_.groups[static_cast<size_t>(g)].size == c.group_size) {
        match = g;
        ++matches;
      }
    }
    return matches == 1 ? match : -1;
  }

  static std::string check_size(const Op& op, int group_size, const CollectiveInfo& c, StepTally& tally) {
    const int64_t nelems = c.kind == CommKind::AllGather ? c.out_nelems : c.in_nelems;
    const int width = c.dtype_bytes();
    if (nelems < 0 || width == 0) {
      ++tally.collectives_without_sizes;
      return "";
    }
    if (c.group_size > 0 && c.group_size != group_size)
      return "the trace's collective has group size " + std::to_string(c.group_size) + ", the Program's " + std::to_string(group_size);
    int64_t bytes = 0;
    if (__builtin_mul_overflow(nelems, static_cast<int64_t>(width), &bytes))
      return "the trace's collective moves " + std::to_string(nelems) + " x " + c.dtype + ", more bytes than a 64-bit count holds; the Program's " +
             std::to_string(op.bytes());
    if (bytes != op.bytes())
      return "the trace's collective moves " + std::to_string(bytes) + " bytes (" + std::to_string(nelems) + " x " + c.dtype +
             "), the Program's " + std::to_string(op.bytes());
    return "";
  }

 public:
  const std::map<std::string, int>& unknown_units() const { return unknown_units_; }

 private:
  const KinetoTrace& t_;
  const Program& p_;
  const ProgramSeqs& seqs_;
  int rank_;
  ImportReport& report_;
  LaunchIndex launches_;
  std::vector<ProfilerStepWindow> steps_;
  std::unordered_map<int64_t, std::vector<FsdpRange>> ranges_;
  std::unordered_map<int64_t, std::vector<Window>> windows_;
  std::vector<RootWindow> root_windows_;
  std::unordered_map<int64_t, std::vector<int64_t>> range_reach_, window_reach_;
  std::vector<MemoryEvent> memory_;  // in time order
  std::vector<MemoryEvent> gpu_allocator_;  // the events with the allocator's totals on the GPU, in time order
  std::map<std::string, int> unknown_units_;
  std::vector<std::vector<int>> by_step_;
};

// Alloc / free markers: issued at their [memory] event when there is one (the first of the same
// signed size not earlier than the previous marker's event), else with the next op that has GPU
// work; they happen when their stream and their dependencies let them. Events of one time
// match in any file order; an event after the issue of the next op with GPU work is not the
// marker's (the host allocates and frees in the Program's order). The ops a one-rank run has no
// GPU work for (its collectives and their all-gather copy-ins, left unmatched by match_step) are
// placed as markers without an event are.
void place_markers(const Program& p, const std::vector<MemoryEvent>& memory, double event_latency_us,
                   std::vector<OpTimesNs>& times, StepTally& tally) {
  const int n = static_cast<int>(p.ops.size());
  // Per op, from one backward walk: the issue of the next op with GPU work (a marker is issued
  // before it), and the measured start of the next such op on its own stream: a marker between
  // two ops of a stream happens no later than the second starts (streams run in order). A Program
  // dependency that would put it later (the compute stream waiting for a reduce-scatter copy-in
  // whose kernels the import attributes past the next copy-out's start, on a one-GPU run's single
  // stream) yields to what was measured.
  std::vector<int64_t> next_issue(static_cast<size_t>(n) + 1, kNone), next_start_on_stream(static_cast<size_t>(n), kNone);
  {
    std::vector<int64_t> next_start(static_cast<size_t>(kNumStreams), kNone);
    int64_t last = kNone;
    for (int i = n - 1; i >= 0; --i) {
      const Op& op = p.ops[static_cast<size_t>(i)];
      const OpTimesNs& t = times[static_cast<size_t>(i)];
      next_start_on_stream[static_cast<size_t>(i)] = next_start[static_cast<size_t>(op.stream)];
      if (!is_marker(op.kind) && t.issue != kNone) {
        last = t.issue;
        next_start[static_cast<size_t>(op.stream)] = t.start;
      }
      next_issue[static_cast<size_t>(i)] = last;
    }
  }
  int64_t previous_issue = 0;
  std::unordered_map<int64_t, std::vector<int64_t>> events_by_size;  // signed bytes -> times, ascending
  for (const MemoryEvent& e : memory) events_by_size[e.bytes].push_back(e.ts_ns);
  std::unordered_map<int64_t, size_t> next_event;  // signed bytes -> first unused of events_by_size
  int64_t last_matched_ns = INT64_MIN;
  std::vector<int64_t> stream_end(static_cast<size_t>(kNumStreams), kNone);
  const int64_t latency_ns = static_cast<int64_t>(std::llround(event_latency_us * 1000.0));
  for (int i = 0; i < n; ++i) {
    const Op& op = p.ops[static_cast<size_t>(i)];
    OpTimesNs& t = times[static_cast<size_t>(i)];
    const bool marker = is_marker(op.kind);
    if (!marker && t.issue == kNone) {
      SHARDLINE_CHECK(p.world_size == 1 && (is_collective(op.kind) || op.kind == OpKind::CopyIn),
                      "only a one-rank run's collectives and all-gather copy-ins go without a match");
      t.issue = next_issue[static_cast<size_t>(i)] != kNone ? next_issue[static_cast<size_t>(i)] : previous_issue;
      int64_t at = std::max(t.issue, stream_end[static_cast<size_t>(op.stream)]);
      for (int d : p.deps(op)) at = std::max(at, times[static_cast<size_t>(d)].end + latency_ns);
      t.start = t.end = at;
      ++tally.ops_without_gpu_work;
    } else if (marker) {
      const int64_t signed_bytes = op.kind == OpKind::Alloc ? op.bytes() : -op.bytes();
      const auto events = events_by_size.find(signed_bytes);
      size_t& j = next_event[signed_bytes];
      if (events != events_by_size.end())
        while (j < events->second.size() && events->second[j] < last_matched_ns) ++j;
      // The host allocates or frees before it issues the op that follows in the Program: a later
      // event of the same size is another tensor (taking it would put every later marker, and
      // what waits on them, after it).
      const int64_t latest = next_issue[static_cast<size_t>(i)] != kNone ? next_issue[static_cast<size_t>(i)] : INT64_MAX;
      if (events != events_by_size.end() && j < events->second.size() && events->second[j] <= latest) {
        t.issue = last_matched_ns = events->second[j++];
        ++tally.markers_from_memory_events;
      } else {
        t.issue = next_issue[static_cast<size_t>(i)] != kNone ? next_issue[static_cast<size_t>(i)] : previous_issue;
        ++tally.markers_from_stream_order;
      }
      int64_t at = std::max(t.issue, stream_end[static_cast<size_t>(op.stream)]);
      for (int d : p.deps(op)) at = std::max(at, times[static_cast<size_t>(d)].end + latency_ns);
      // Never before its own issue or its stream's previous op (a timeline's reader refuses a start
      // before the issue).
      if (const int64_t next = next_start_on_stream[static_cast<size_t>(i)]; next != kNone)
        at = std::max({t.issue, stream_end[static_cast<size_t>(op.stream)], std::min(at, next)});
      t.start = t.end = at;
    }
    previous_issue = t.issue;
    stream_end[static_cast<size_t>(op.stream)] = std::max(stream_end[static_cast<size_t>(op.stream)], t.end);
  }
}

}  // namespace

ImportResult map_traces_to_program(const std::vector<KinetoTrace>& traces, const Program& program, const ImportOptions& options) {
  if (static_cast<int>(traces.size()) != program.world_size)
    throw InputError("TRACE", "got " + std::to_string(traces.size()) + " traces; the scenario's mesh has " +
                                  std::to_string(program.world_size) + " ranks: give one trace per rank");
  ImportResult result;
  ImportReport& report = result.report;
  report.ranks = program.world_size;
  const ProgramSeqs seqs = program_seqs(program);
  const size_t nops = program.ops.size();

  // Per rank: the steps that match, with their op times (ns, the rank's clock).
  std::vector<std::map<std::string, std::vector<OpTimesNs>>> matched(traces.size());
  std::vector<std::map<std::string, int64_t>> step_start(traces.size());
  std::vector<std::string> step_order;
  std::vector<std::map<std::string, StepTally>> tallies(traces.size());  // per rank, per step
  std::vector<std::map<std::string, std::optional<AllocatorPeaks>>> allocator(traces.size());  // per rank, per step
  for (size_t r = 0; r < traces.size(); ++r) {
    require_gpu_activity(traces[r]);
    RankMapper mapper(traces[r], program, seqs, static_cast<int>(r), report);
    for (const auto& [fqn, count] : mapper.unknown_units())
      report.unmatched_steps.push_back("rank " + std::to_string(r) + ": " + std::to_string(count) +
                                       (fqn.empty() ? " FSDP windows of the root module (ranges without an FQN) whose work no unit of the "
                                                      "scenario takes (its units are the ones no range names, before and after the named ones)"
                                                    : " FSDP windows of module \"" + fqn + "\", which names no unit of the scenario"));
    for (size_t w = 0; w < mapper.steps().size(); ++w) {
      const std::string& name = mapper.steps()[w].name;
      std::vector<OpTimesNs> times(nops);
      StepTally tally;
      const std::string why = mapper.match_step(w, times, tally);
      if (!why.empty()) {
        report.unmatched_steps.push_back("rank " + std::to_string(r) + ", " + name + ": " + why);
        continue;
      }
      place_markers(program, mapper.memory_in(w), options.event_latency_us, times, tally);
      int64_t first = kNone;
      for (const OpTimesNs& t : times) first = first == kNone ? t.issue : std::min(first, t.issue);
      step_start[r][name] = mapper.steps()[w].ts_ns == INT64_MIN ? first : mapper.steps()[w].ts_ns;
      matched[r][name] = std::move(times);
      tallies[r][name] = std::move(tally);
      allocator[r][name] = mapper.allocator_peaks_in(w);
      if (r == 0) step_order.push_back(name);
    }
  }
  for (const std::string& name : step_order) {
    bool everywhere = true;
    for (size_t r = 1; r < traces.size(); ++r) everywhere = everywhere && matched[r].count(name);
    if (everywhere) report.steps.push_back(name);
    else report.unmatched_steps.push_back(name + ": matched on rank 0, not on every rank");
  }
  if (report.steps.empty()) {
    std::string why = report.unmatched_steps.empty() ? "the traces have no GPU work in any profiler step" : report.unmatched_steps.front();
    throw InputError("TRACE", "no profiler step matches the scenario's Program on every rank (" + why + ")");
  }

  report.matched_steps = static_cast<int>(report.steps.size());
  const std::string how_many = "the traces match " + std::to_string(report.matched_steps) + " profiler steps";
  if (options.first_step > 0) {
    SHARDLINE_CHECK(options.last_step >= options.first_step, "the steps asked for end before they begin");
    if (options.last_step > report.matched_steps)
      throw InputError("--steps", std::to_string(options.first_step) + ".." + std::to_string(options.last_step) + " ends beyond the steps: " +
                                      how_many + " on every rank");
    report.steps = std::vector<std::string>(report.steps.begin() + (options.first_step - 1), report.steps.begin() + options.last_step);
    report.first_step = options.first_step;
  }
  if (report.steps.size() > static_cast<size_t>(kMaxTimelineIterations))
    throw InputError("TRACE", how_many + "; a timeline holds at most " + std::to_string(kMaxTimelineIterations) +
                                  ": import a window of them with --steps FIRST..LAST (e.g. --steps 1.." +
                                  std::to_string(kMaxTimelineIterations) + "), or profile fewer steps");
  Timeline& t = result.timeline;
  t.source = "measured";
  t.backend = "nccl";
  t.scenario = program.scenario;
  t.ranks = program.world_size;
  t.iterations = static_cast<int>(report.steps.size());
  set_timeline_ops(t, program);
  for (size_t it = 0; it < report.steps.size(); ++it) {
    const std::string& name = report.steps[it];
    int64_t origin = INT64_MAX;
    for (size_t r = 0; r < traces.size(); ++r) origin = std::min(origin, step_start[r][name]);
    for (size_t r = 0; r < traces.size(); ++r) {
      const std::vector<OpTimesNs>& times = matched[r][name];
      for (size_t i = 0; i < nops; ++i) {
        OpInterval iv;
        iv.op = static_cast<int>(i);
        iv.rank = static_cast<int>(r);
        iv.iteration = static_cast<int>(it);
        iv.issue_us = static_cast<double>(times[i].issue - origin) / 1000.0;
        iv.start_us = static_cast<double>(times[i].start - origin) / 1000.0;
        iv.end_us = static_cast<double>(times[i].end - origin) / 1000.0;
        // A corrupt "ts" or "dur" (1e19, a clamped overflow) lands far from the step: refused
        // here, as reading the timeline back would refuse it.
        for (const double us : {iv.issue_us, iv.start_us, iv.end_us})
          if (!(std::abs(us) <= kMaxTimelineUs))
            throw InputError(traces[r].path, "(rank " + std::to_string(r) + ") puts " + program.name(program.ops[i]) + " of " + name + " " +
                                                 number_text(us) + " us from the step's start (the earliest rank's), beyond the " +
                                                 number_text(kMaxTimelineUs / 86400e6) + " days a timeline may span: an event's \"ts\" or \"dur\" is corrupt");
        t.intervals.push_back(iv);
      }
      const StepTally& tally = tallies[r][name];
      for (const auto& [what, n] : tally.not_in_program) {
        report.not_in_program[what].count += n.count;
        report.not_in_program[what].gpu_us += n.gpu_us;
      }
      report.markers_from_memory_events += tally.markers_from_memory_events;
      report.markers_from_stream_order += tally.markers_from_stream_order;
      report.collectives_without_sizes += tally.collectives_without_sizes;
      report.ops_without_gpu_work += tally.ops_without_gpu_work;
    }
  }
  // Clocks: a collective's kernels overlap on every member (each waits inside it for the others),
  // so one that ends on a rank before it starts on another shows their clocks disagree by at
  // least that much. Intervals are in (iteration, rank, op) order.
  const size_t nranks = traces.size();
  for (size_t it = 0; it < report.steps.size(); ++it)
    for (size_t i = 0; i < nops; ++i) {
      const Op& op = program.ops[i];
      if (!is_collective(op.kind)) continue;
      const GroupInfo& g = program.group_of(op);
      if (g.size < 2) continue;
      for (size_t r = 0; r < nranks; ++r) {
        if (g.index(static_cast<int>(r)) != 0) continue;  // each group instance once, from its first member
        const OpInterval *latest_start = nullptr, *earliest_end = nullptr;
        for (int k = 0; k < g.size; ++k) {
          const OpInterval& iv = t.intervals[(it * nranks + static_cast<size_t>(g.member(static_cast<int>(r), k))) * nops + i];
          if (!latest_start || iv.start_us > latest_start->start_us) latest_start = &iv;
          if (!earliest_end || iv.end_us < earliest_end->end_us) earliest_end = &iv;
        }
        const double gap_us = latest_start->start_us - earliest_end->end_us;
        if (gap_us > report.clock_skew_us) {
          report.clock_skew_us = gap_us;
          report.clock_skew_example = program.name(op) + " of " + report.steps[it] + " ends on rank " + std::to_string(earliest_end->rank) +
                                      " " + number_text(gap_us) + " us before it starts on rank " + std::to_string(latest_start->rank);
        }
      }
    }
  t.reported_iteration = median_step_iteration(iteration_step_times_us(t));  // as exec reports its run
  // The allocator's figures of the reported iteration, the largest of any rank, when every rank's
  // trace has them (a rank without them might have held the most).
  const std::string& reported = report.steps[static_cast<size_t>(t.reported_iteration)];
  AllocatorPeaks largest;
  for (size_t r = 0; r < traces.size(); ++r) {
    const std::optional<AllocatorPeaks>& peaks = allocator[r][reported];
    if (!peaks) continue;
    ++report.allocator_ranks;
    largest.peak_allocated_bytes = std::max(largest.peak_allocated_bytes, peaks->peak_allocated_bytes);
    largest.peak_reserved_bytes = std::max(largest.peak_reserved_bytes, peaks->peak_reserved_bytes);
  }
  if (report.allocator_ranks == static_cast<int>(traces.size())) t.allocator_measured = report.allocator_measured = largest;
  return result;
}

std::string import_report_text(const ImportReport& r) {
  std::ostringstream out;
  out << "imported " << r.steps.size() << (r.steps.size() == 1 ? " profiler step" : " profiler steps") << " on " << r.ranks
      << (r.ranks == 1 ? " rank" : " ranks");
  if (static_cast<int>(r.steps.size()) != r.matched_steps)
    out << " (--steps " << r.first_step << ".." << r.first_step + static_cast<int>(r.steps.size()) - 1 << " of the " << r.matched_steps
        << " matching on every rank)";
  // The names, the first and last few of a long run (import.json lists every one).
  constexpr size_t kEnds = 3;
  out << ":";
  for (size_t i = 0; i < r.steps.size(); ++i) {
    if (r.steps.size() > 2 * kEnds + 1 && i == kEnds) {
      out << " ...";
      i = r.steps.size() - kEnds;
    }
    out << " " << r.steps[i];
  }
  out << "\n";
  if (!r.unmatched_steps.empty()) {
    out << "left out (" << r.unmatched_steps.size() << "):\n";
    for (const std::string& s : r.unmatched_steps) out << "  " << s << "\n";
  }
  if (!r.not_in_program.empty()) {
    out << "GPU work in the imported steps with no op in the Program (every rank):\n";
    for (const auto& [what, n] : r.not_in_program) out << "  " << what << ": " << n.count << " (" << n.gpu_us / 1e3 << " ms of GPU time)\n";
  }
  if (r.gpu_activities_outside_steps > 0) out << r.gpu_activities_outside_steps << " GPU activities launched outside every profiler step\n";
  if (r.clock_skew_us > kClockSkewSaidUs)
    out << "clocks: the ranks' clocks disagree by at least " << number_text(r.clock_skew_us / 1e3) << " ms (" << r.clock_skew_example
        << "; a collective's kernels overlap on every member): times compared across ranks (waits inside collectives, "
        << "issue gaps) are off by as much\n";
  if (r.gpu_activities_without_launch > 0)
    out << r.gpu_activities_without_launch << " GPU activities have no recorded CPU launch: each placed by its own start, so an op's "
        << "issue time is its GPU start there\n";
  out << "alloc/free markers: " << r.markers_from_memory_events << " at their [memory] event, " << r.markers_from_stream_order
      << " placed by stream order (no matching [memory] event)\n";
  if (r.collectives_without_sizes > 0) out << r.collectives_without_sizes << " NCCL kernels without size metadata: sizes not checked\n";
  if (r.ops_without_gpu_work > 0)
    out << r.ops_without_gpu_work
        << " collectives and all-gather copy-ins of the one-rank run with no GPU work in the trace (FSDP2 launches none on one rank): "
           "placed at zero length after their dependencies\n";
  if (r.allocator_measured)
    out << "allocator (the reported step's [memory] events, the largest of every rank): peak allocated "
        << format_bytes(r.allocator_measured->peak_allocated_bytes) << ", peak reserved " << format_bytes(r.allocator_measured->peak_reserved_bytes)
        << " (timeline.json allocator_measured; compare holds the predicted peak memory against them)\n";
  else
    out << "allocator: " << r.allocator_ranks << " of " << r.ranks
        << " ranks' traces carry its totals in the reported step ([memory] events on a CUDA device with \"Total Allocated\"; "
           "profile with profile_memory=True): no measured peak memory\n";
  return out.str();
}

nlohmann::json import_report_to_json(const ImportReport& r) {
  nlohmann::json j;
  j["ranks"] = r.ranks;
  j["steps"] = r.steps;
  j["matched_steps"] = r.matched_steps;
  j["first_step"] = r.first_step;
  j["unmatched_steps"] = r.unmatched_steps;
  j["not_in_program"] = nlohmann::json::object();
  for (const auto& [what, n] : r.not_in_program) j["not_in_program"][what] = {{"count", n.count}, {"gpu_us", n.gpu_us}};
  j["gpu_activities_outside_steps"] = r.gpu_activities_outside_steps;
  j["gpu_activities_without_launch"] = r.gpu_activities_without_launch;
  j["clock_skew_us_at_least"] = r.clock_skew_us;
  j["markers_from_memory_events"] = r.markers_from_memory_events;
  j["markers_from_stream_order"] = r.markers_from_stream_order;
  j["collectives_without_sizes"] = r.collectives_without_sizes;
  j["ops_without_gpu_work"] = r.ops_without_gpu_work;
  j["allocator_ranks"] = r.allocator_ranks;
  if (r.allocator_measured) j["allocator_measured"] = allocator_peaks_to_json(*r.allocator_measured);
  return j;
}

}  // namespace shardline::kineto
