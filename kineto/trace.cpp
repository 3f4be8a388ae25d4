#include "kineto/trace.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

#include "core/error.h"

namespace shardline::kineto {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  out.erase(std::remove(out.begin(), out.end(), '_'), out.end());
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::string_view comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::AllGather: return "all_gather";
    case CommKind::ReduceScatter: return "reduce_scatter";
    case CommKind::AllReduce: return "all_reduce";
    case CommKind::Other: return "other";
  }
  return "other";
}

int CollectiveInfo::dtype_bytes() const {
  // c10::ScalarType names as the profiler writes them.
  static const std::array<std::pair<std::string_view, int>, 16> widths{{
      {"Float", 4}, {"BFloat16", 2}, {"Half", 2}, {"Double", 8}, {"Long", 8}, {"Int", 4}, {"Short", 2},
      {"Byte", 1}, {"Char", 1}, {"Bool", 1}, {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1},
      {"Float8_e4m3fnuz", 1}, {"Float8_e5m2fnuz", 1}, {"ComplexFloat", 8}, {"ComplexDouble", 16}}};
  for (const auto& [name, bytes] : widths)
    if (dtype == name) return bytes;
  return 0;
}

bool is_nccl_kernel_name(std::string_view name) {
  return starts_with(name, "ncclDevKernel_") || starts_with(name, "ncclKernel_");
}

CommKind comm_kind_from_kernel_name(std::string_view name) {
  const size_t underscore = name.find('_');
  if (underscore == std::string_view::npos) return CommKind::Other;
  std::string_view rest = name.substr(underscore + 1);
  if (starts_with(rest, "AllGather")) return CommKind::AllGather;
  if (starts_with(rest, "ReduceScatter")) return CommKind::ReduceScatter;
  if (starts_with(rest, "AllReduce")) return CommKind::AllReduce;
  return CommKind::Other;
}

CommKind comm_kind_from_collective_name(std::string_view name) {
  // "allgather", "_allgather_base", "all_gather_into_tensor", "allgather_into_tensor_coalesced",
  // "reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor_coalesced", "allreduce", ...
  const std::string n = lower(name);
  if (n.find("allgather") != std::string::npos) return CommKind::AllGather;
  if (n.find("reducescatter") != std::string::npos) return CommKind::ReduceScatter;
  if (n.find("allreduce") != std::string::npos) return CommKind::AllReduce;
  return CommKind::Other;
}

std::vector<int> gpu_devices(const KinetoTrace& trace) {
  std::vector<int> devices;
  for (const GpuActivity& a : trace.gpu)
    if (a.device >= 0 && std::find(devices.begin(), devices.end(), a.device) == devices.end()) devices.push_back(a.device);
  std::sort(devices.begin(), devices.end());
  return devices;
}

void require_gpu_activity(const KinetoTrace& trace) {
  if (!trace.gpu.empty()) return;
  if (const int64_t dropped = trace.dropped_gpu_activities; dropped > 0)
    throw InputError(trace.path, "keeps no GPU activity: its " + std::to_string(dropped) +
                                     " GPU activities were all dropped as ones the profiler could not time (ts 0 and dur 0, or a "
                                     "negative dur)");
  throw InputError(trace.path, "has no GPU kernels, memcpys or memsets: profile with ProfilerActivity.CUDA to import it");
}

}  // namespace shardline::kineto
