#include "reports/trace.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/kernel_breakdown.h"
#include "reports/trace_time.h"

namespace shardline {

using nlohmann::json;

namespace {

json metadata(const char* what, int pid, int tid, const std::string& name) {
  json e = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

json sort_index(const char* what, int pid, int tid, int index) {
  json e = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"sort_index", index}}}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

// Every event of the trace, in order, handed to `emit` as it is made.
void for_each_trace_event(const Timeline& t, const std::vector<UnitCompute>* kernels, const std::function<void(json&&)>& emit) {
  bool has_issue = false;
  std::set<int> ranks;
  for (const OpInterval& iv : t.intervals) {
    ranks.insert(iv.rank);
    if (iv.issue_us != 0) has_issue = true;
  }
  if (ranks.empty()) ranks.insert(0);  // ranks that ran nothing get no process

  for (int rank : ranks) {
    emit(metadata("process_name", rank, -1, "rank " + std::to_string(rank) + " (" + t.source + ")"));
    emit(sort_index("process_sort_index", rank, -1, rank));
    for (int s = 0; s < kNumStreams; ++s) {
      emit(metadata("thread_name", rank, s, std::string(stream_name(static_cast<StreamId>(s)))));
      emit(sort_index("thread_sort_index", rank, s, s + 1));
    }
    if (has_issue) {
      emit(metadata("thread_name", rank, kTraceHostTid, "host (issue)"));
      emit(sort_index("thread_sort_index", rank, kTraceHostTid, 0));
    }
  }

  // A measured run's iterations each count from their own start (exec's barrier, a profiler
  // step): laid one after another on the trace's clock, as they ran, or a viewer would stack
  // them at the same timestamps and mis-nest their slices. Iteration k starts where iteration
  // k - 1 ended, plus a gap of a tenth of that iteration.
  std::vector<double> iteration_end(static_cast<size_t>(std::max(t.iterations, 1)), 0.0);
  for (const OpInterval& iv : t.intervals)
    if (iv.iteration >= 0 && static_cast<size_t>(iv.iteration) < iteration_end.size())
      iteration_end[static_cast<size_t>(iv.iteration)] = std::max(iteration_end[static_cast<size_t>(iv.iteration)], iv.end_us);
  std::vector<double> offset(iteration_end.size(), 0.0);
  for (size_t k = 1; k < offset.size(); ++k) offset[k] = offset[k - 1] + iteration_end[k - 1] * 1.1;
  const auto shifted = [&](const OpInterval& iv, double us) {
    return iv.iteration >= 0 && static_cast<size_t>(iv.iteration) < offset.size() ? us + offset[static_cast<size_t>(iv.iteration)] : us;
  };

  for (const OpInterval& iv : t.intervals) {
    const Op& op = t.ops.at(iv.op);
    const std::string name = t.name(op);
    json args = {{"op", iv.op},
                 {"kind", op_kind_name(op.kind)},
                 {"unit", op.unit},
                 {"bucket", op.bucket},
                 {"bytes", op.bytes()},
                 {"microbatch", op.microbatch},
                 {"phase", phase_name(op.phase)},
                 {"iteration", iv.iteration}};
    if (op.group != CommGroup::None) {
      args["group"] = comm_group_name(op.group);
      args["group_size"] = t.group_size(op);
    }
    const int64_t start_ns = trace_ns(shifted(iv, iv.start_us)), end_ns = trace_ns(shifted(iv, iv.end_us));
    emit(json{{"ph", "X"},
                      {"name", name},
                      {"cat", op_kind_name(op.kind)},
                      {"pid", iv.rank},
                      {"tid", static_cast<int>(op.stream)},
                      {"ts", trace_us(start_ns)},
                      {"dur", trace_us(end_ns - start_ns)},
                      {"args", std::move(args)}});
    if (has_issue) {
      emit(json{{"ph", "i"},
                        {"s", "t"},
                        {"name", "issue " + name},
                        {"cat", "issue"},
                        {"pid", iv.rank},
                        {"tid", kTraceHostTid},
                        {"ts", trace_us(trace_ns(shifted(iv, iv.issue_us)))},
                        {"args", {{"op", iv.op}, {"iteration", iv.iteration}}}});
    }
  }

  if (kernels != nullptr) for_each_kernel_trace_event(t, *kernels, emit);

  // On the step's clock: the samples as the streams reach the markers where the host issues them
  // all at the start (Timeline::memory_by_stream).
  for (const MemorySample& m : t.drawn_memory())
    emit(json{{"ph", "C"}, {"name", "memory"}, {"pid", 0}, {"ts", trace_us(trace_ns(m.time_us))}, {"args", {{"live_bytes", m.bytes}}}});
}

constexpr const char* kDisplayTimeUnit = "ms";

}  // namespace

json trace_to_json(const Timeline& t, const std::vector<UnitCompute>* kernels) {
  json events = json::array();
  for_each_trace_event(t, kernels, [&events](json&& e) { events.push_back(std::move(e)); });
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", kDisplayTimeUnit}};
}

std::string trace_json_text(const Timeline& t, const std::vector<UnitCompute>* kernels) {
  // trace_to_json(...).dump(): an object's keys print sorted, so displayTimeUnit comes first.
  std::string text = "{\"displayTimeUnit\":" + json(kDisplayTimeUnit).dump() + ",\"traceEvents\":[";
  bool first = true;
  for_each_trace_event(t, kernels, [&](json&& e) {
    if (!first) text += ',';
    first = false;
    text += e.dump();
  });
  return text + "]}";
}

}  // namespace shardline
