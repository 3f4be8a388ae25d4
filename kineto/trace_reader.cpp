#include "kineto/trace_reader.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <thread>
#include <filesystem>
#include <istream>
#include <optional>
#include <streambuf>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/scenario.h"

namespace shardline::kineto {
namespace {

using nlohmann::json;

// A read-only streambuf over zlib's gz* interface, which reads gzip and plain files alike.
// A truncated or corrupt gzip throws InputError naming the file.
class GzipFileBuf : public std::streambuf {
 public:
  explicit GzipFileBuf(const std::string& path) : path_(path), buffer_(1 << 18) {
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) throw InputError(path, "cannot be opened for reading");
    gzbuffer(file_, 1 << 17);
  }
  ~GzipFileBuf() override {
    if (file_) gzclose(file_);
  }
  GzipFileBuf(const GzipFileBuf&) = delete;
  GzipFileBuf& operator=(const GzipFileBuf&) = delete;
  int64_t bytes_read() const { return bytes_read_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
    int error = Z_OK;
    const char* message = gzerror(file_, &error);
    if (n < 0 || (error != Z_OK && error != Z_STREAM_END)) {
      // What this read decoded before the error counts too; zlib's message starts with the
      // path, which the error names already.
      const int64_t decoded = bytes_read_ + std::max(n, 0);
      std::string why = message != nullptr ? message : "unknown error";
      if (why.rfind(path_ + ": ", 0) == 0) why = why.substr(path_.size() + 2);
      const std::string what = error == Z_BUF_ERROR ? "the gzip stream ends early (truncated file)" : "corrupt gzip: " + why;
      throw InputError(path_, what + " after " + std::to_string(decoded) + " uncompressed bytes");
    }
    if (n == 0) return traits_type::eof();
    bytes_read_ += n;
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  std::vector<char> buffer_;
  int64_t bytes_read_ = 0;
};

// Where in the document a value sits.
enum class Ctx : uint8_t { Root, TraceEvents, Event, Args, RanksArray, DistInfo, DeviceProps, DeviceProp, Ignored };

struct PendingEvent {
  std::string ph, cat, name;
  int64_t tid = 0;
  int64_t ts_ns = 0, dur_ns = 0;
  bool has_ts = false, has_dur = false;
  int64_t stream = -1, correlation = -1, device = -1;
  int64_t bytes = 0;
  bool has_bytes = false;
  int64_t total_allocated = -1, total_reserved = -1, device_type = -1;  // [memory] events' args
  bool has_collective = false;
  CollectiveInfo collective;
  std::string ranks_text;
  std::string bad_ts, bad_dur;  // why "ts" / "dur" is no time ("" when fine or absent)
  std::string bad_count;        // why a message size or "Group size" is no count ("" when fine)

  void reset() {
    ph.clear();
    cat.clear();
    name.clear();
    tid = 0;
    ts_ns = dur_ns = 0;
    has_ts = has_dur = false;
    stream = correlation = device = -1;
    bytes = 0;
    has_bytes = false;
    total_allocated = total_reserved = device_type = -1;
    has_collective = false;
    collective = CollectiveInfo{};
    ranks_text.clear();
    bad_ts.clear();
    bad_dur.clear();
    bad_count.clear();
  }
};

// The numbers of a "Process Group Ranks" text ("[0, 8, 16, ..., 120, ...]": the profiler's
// separators and shortening marks are not numbers); nullopt when one is no rank (kMaxWorldRanks or more).
std::optional<std::vector<int>> parse_rank_list(std::string_view text) {
  std::vector<int> ranks;
  int64_t value = -1;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      value = (value < 0 ? 0 : value * 10) + (c - '0');
      if (value >= kMaxWorldRanks) return std::nullopt;
    } else if (value >= 0) {
      ranks.push_back(static_cast<int>(value));
      value = -1;
    }
  }
  if (value >= 0) ranks.push_back(static_cast<int>(value));
  return ranks;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

class TraceSax {
 public:
  explicit TraceSax(KinetoTrace& trace) : t_(trace) {}

  bool saw_trace_events() const { return saw_trace_events_; }
  const std::string& error() const { return error_; }

  bool null() {
    not_a_time("null");
    not_a_rank_list("null");
    return not_a_count("null") && scalar_done();
  }
  bool boolean(bool v) {
    not_a_time(v ? "true" : "false");
    not_a_rank_list(v ? "true" : "false");
    return not_a_count(v ? "true" : "false") && scalar_done();
  }
  bool number_integer(json::number_integer_t v) { return integer(static_cast<int64_t>(v)); }
  bool number_unsigned(json::number_unsigned_t v) {
    if (v > static_cast<json::number_unsigned_t>(INT64_MAX) && time_key()) {
      set_time(INT64_MAX, std::to_string(v));  // out of range: refused with its text
      return scalar_done();
    }
    return integer(v > static_cast<json::number_unsigned_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v));
  }
  bool number_float(json::number_float_t v, const std::string& text) {
    if (time_key()) {
      set_time(microseconds_text_to_ns(text, v), text);
    } else if (std::isfinite(v) && std::abs(v) < 9e18) {
      // Some writers give integral fields as floats ("Group size": 2.0).
      const double rounded = std::round(v);
      if (rounded == v) return integer(static_cast<int64_t>(rounded));
    }
    const std::string why = text + (std::isfinite(v) && std::abs(v) < 9e18 ? ", not a whole number" : ", out of range");
    not_a_rank_list(text);
    return not_a_count(why) && scalar_done();
  }
  bool string(std::string& v) {
    not_a_time("the string \"" + v.substr(0, 40) + "\"");
    if (!stack_.empty() && top() == Ctx::RanksArray) not_a_rank_list("the string \"" + v.substr(0, 40) + "\"");
    if (!not_a_count("the string \"" + v.substr(0, 40) + "\", not a number")) return false;
    switch (top()) {
      case Ctx::Event:
        if (key_ == "ph") ev_.ph = v;
        else if (key_ == "cat") ev_.cat = v;
        else if (key_ == "name") ev_.name = v;
        break;
      case Ctx::Args:
        if (key_ == "Collective name") {
          ev_.collective.name = v;
          ev_.has_collective = true;
        } else if (key_ == "dtype") {
          ev_.collective.dtype = v;
        } else if (key_ == "Process Group Name") {
          ev_.collective.group_name = v;
        } else if (key_ == "Process Group Ranks") {
          ev_.ranks_text = v;
        }
        break;
      case Ctx::DeviceProp:
        if (key_ == "name" && t_.device.empty()) t_.device = v;
        break;
      default: break;
    }
    return scalar_done();
  }
  bool binary(json::binary_t&) { return scalar_done(); }

  bool start_object(std::size_t) {
    not_a_time("an object");
    not_a_rank_list("an object");
    if (!not_a_count("an object")) return false;
    Ctx next = Ctx::Ignored;
    if (stack_.empty()) {
      next = Ctx::Root;
    } else {
      switch (top()) {
        case Ctx::Root: next = key_ == "distributedInfo" ? Ctx::DistInfo : Ctx::Ignored; break;
        case Ctx::TraceEvents:
          next = Ctx::Event;
          ev_.reset();
          break;
        case Ctx::Event: next = key_ == "args" ? Ctx::Args : Ctx::Ignored; break;
        case Ctx::DeviceProps: next = Ctx::DeviceProp; break;
        default: break;
      }
    }
    return push(next);
  }
  bool key(std::string& k) {
    key_ = k;
    return true;
  }
  bool end_object() {
    const Ctx c = top();
    stack_.pop_back();
    if (c == Ctx::Event) return finish_event();  // counts it
    return scalar_done();
  }
  bool start_array(std::size_t) {
    not_a_time("an array");
    if (!stack_.empty() && top() == Ctx::RanksArray) not_a_rank_list("an array");
    if (!not_a_count("an array")) return false;
    Ctx next = Ctx::Ignored;
    if (stack_.empty()) {
      next = Ctx::TraceEvents;  // a bare array of events (Chrome's "JSON array format")
      saw_trace_events_ = true;
    } else if (top() == Ctx::Root && key_ == "traceEvents") {
      next = Ctx::TraceEvents;
      saw_trace_events_ = true;
    } else if (top() == Ctx::Root && key_ == "deviceProperties") {
      next = Ctx::DeviceProps;
    } else if (top() == Ctx::Args && key_ == "Process Group Ranks") {
      next = Ctx::RanksArray;
      ev_.collective.group_ranks.clear();
    }
    return push(next);
  }
  bool end_array() {
    stack_.pop_back();
    return scalar_done();
  }
  bool parse_error(std::size_t position, const std::string& last_token, const json::exception& e) {
    std::string what = e.what();
    if (const size_t bracket = what.find("] "); bracket != std::string::npos) what = what.substr(bracket + 2);
    error_ = "not JSON at byte " + std::to_string(position) + " (near '" + last_token.substr(0, 40) + "'): " + what;
    return false;
  }

 private:
  static constexpr size_t kMaxDepth = 64;

  Ctx top() const { return stack_.back(); }
  bool push(Ctx c) {
    if (stack_.size() >= kMaxDepth) {
      error_ = "JSON nested deeper than " + std::to_string(kMaxDepth) + " levels; expected a profiler trace (a few levels)";
      return false;
    }
    stack_.push_back(c);
    return true;
  }
  // After a value inside an array of events, count it.
  bool scalar_done() {
    if (!stack_.empty() && top() == Ctx::TraceEvents) ++t_.events;
    return true;
  }
  // Whether the value being read is an event's "ts" or "dur".
  bool time_key() const { return !stack_.empty() && top() == Ctx::Event && (key_ == "ts" || key_ == "dur"); }
  // Whether it is a collective's message size or group size (a count), or the trace's rank.
  bool count_key() const {
    return !stack_.empty() && top() == Ctx::Args && (key_ == "In msg nelems" || key_ == "Out msg nelems" || key_ == "Group size");
  }
  bool rank_key() const { return !stack_.empty() && top() == Ctx::DistInfo && key_ == "rank"; }
  bool world_size_key() const { return !stack_.empty() && top() == Ctx::DistInfo && key_ == "world_size"; }
  // An NCCL kernel's "Process Group Ranks" (a list, or the profiler's text of one).
  bool ranks_key() const { return !stack_.empty() && top() == Ctx::Args && key_ == "Process Group Ranks"; }
  // A distributedInfo.rank that is no rank: the trace cannot be put in its place among the ranks.
  bool refuse_rank(const std::string& what) {
    error_ = "distributedInfo.rank is " + what + "; expected the rank's number (0 or more)";
    return false;
  }
  // A value that is no count (`what`: "null", "the string \"2\", not a number", "1.5, not a whole
  // number") where a count is read: a collective's size fields are kept to refuse at the event's
  // end (only a kind the import maps needs them), a rank is refused at once (false stops the parse).
  bool not_a_count(const std::string& what) {
    if (count_key()) ev_.bad_count = "\"" + key_ + "\" is " + what;
    if (rank_key()) return refuse_rank(what);
    if (world_size_key()) {
      error_ = "distributedInfo.world_size is " + what + "; expected the number of ranks (1 to " + std::to_string(kMaxWorldRanks) + ")";
      return false;
    }
    return true;
  }
  // A "Process Group Ranks" that is no list of ranks, or a list holding something that is no rank.
  void not_a_rank_list(const std::string& what) {
    if (ranks_key()) ev_.bad_count = "\"Process Group Ranks\" is " + what + ", not a list of ranks";
    else if (!stack_.empty() && top() == Ctx::RanksArray) ev_.bad_count = "\"Process Group Ranks\" holds " + what + ", not a rank";
  }
  // An event's "ts" or "dur" that is no number (`what`: "null", "the string \"12\"", ...).
  void not_a_time(const std::string& what) {
    if (!time_key()) return;
    (key_ == "ts" ? ev_.bad_ts : ev_.bad_dur) = "\"" + key_ + "\" is " + what + ", not a number of microseconds";
    (key_ == "ts" ? ev_.has_ts : ev_.has_dur) = true;
  }
  // `ns` read from `text` (the number as written): a time within kMaxTraceTimeNs of the epoch, a
  // duration in [0, kMaxTraceDurationNs]; anything else is kept as why it is refused.
  void set_time(int64_t ns, const std::string& text) {
    if (key_ == "ts") {
      ev_.ts_ns = ns;
      ev_.has_ts = true;
      if (ns < -kMaxTraceTimeNs || ns > kMaxTraceTimeNs)
        ev_.bad_ts = "\"ts\" is " + text + " us, more than 4e15 us (126 years) from the clock's zero";
    } else {
      ev_.dur_ns = ns;
      ev_.has_dur = true;
      if (ns < 0) ev_.bad_dur = "\"dur\" is " + text + " us, negative";
      else if (ns > kMaxTraceDurationNs) ev_.bad_dur = "\"dur\" is " + text + " us, more than the 10 days an event may last";
    }
  }
  bool integer(int64_t v) {
    switch (top()) {
      case Ctx::Event:
        if (key_ == "ts" || key_ == "dur") {
          const bool fits = v >= INT64_MIN / 1000 && v <= INT64_MAX / 1000;
          set_time(fits ? v * 1000 : (v < 0 ? INT64_MIN : INT64_MAX), std::to_string(v));
        } else if (key_ == "tid") {
          ev_.tid = v;
        }
        break;
      case Ctx::Args:
        if (key_ == "stream") ev_.stream = v;
        else if (key_ == "correlation") ev_.correlation = v;
        else if (key_ == "device") ev_.device = v;
        else if (key_ == "Bytes") {
          ev_.bytes = v;
          ev_.has_bytes = true;
        }
        else if (key_ == "Total Allocated") ev_.total_allocated = v;
        else if (key_ == "Total Reserved") ev_.total_reserved = v;
        else if (key_ == "Device Type") ev_.device_type = v;
        else if (key_ == "In msg nelems") ev_.collective.in_nelems = v;
        else if (key_ == "Out msg nelems") ev_.collective.out_nelems = v;
        else if (key_ == "Group size") ev_.collective.group_size = v;
        if ((key_ == "In msg nelems" || key_ == "Out msg nelems") && v < 0)
          ev_.bad_count = "\"" + key_ + "\" is " + std::to_string(v) + ", negative";
        if (key_ == "Group size" && v < 1) ev_.bad_count = "\"Group size\" is " + std::to_string(v) + ", not a group of ranks";
        not_a_rank_list(std::to_string(v));
        break;
      case Ctx::RanksArray:
        if (v >= 0 && v < kMaxWorldRanks) ev_.collective.group_ranks.push_back(static_cast<int>(v));
        else ev_.bad_count = "\"Process Group Ranks\" holds " + std::to_string(v) + ", not a rank (0 to " + std::to_string(kMaxWorldRanks - 1) + ")";
        break;
      case Ctx::DistInfo:
        if (key_ == "rank" && v < 0) return refuse_rank(std::to_string(v) + ", negative");
        if (key_ == "rank") t_.rank = static_cast<int>(std::clamp<int64_t>(v, -1, 1 << 30));
        else if (key_ == "world_size") {
          if (v < 1 || v > kMaxWorldRanks) {
            error_ = "distributedInfo.world_size is " + std::to_string(v) + "; expected the number of ranks (1 to " +
                     std::to_string(kMaxWorldRanks) + ")";
            return false;
          }
          t_.world_size = static_cast<int>(v);
        }
        break;
      default: break;
    }
    return scalar_done();
  }

  int intern(const std::string& name) {
    auto [it, added] = ids_.try_emplace(name, static_cast<int>(t_.names.size()));
    if (added) t_.names.push_back(name);
    return it->second;
  }

  void skip(const std::string& why) { ++t_.skipped_by_category[why]; }

  // The category, with the names older profilers (PyTorch 1.8-1.10 Kineto) wrote mapped to
  // today's: "Kernel", "Memcpy", "Memset", "Runtime", "Driver".
  static std::string_view category(const std::string& cat) {
    if (cat == "Kernel") return "kernel";
    if (cat == "Memcpy") return "gpu_memcpy";
    if (cat == "Memset") return "gpu_memset";
    if (cat == "Runtime") return "cuda_runtime";
    if (cat == "Driver") return "cuda_driver";
    return cat;
  }

  // An event that is kept: a GPU activity, a CPU launch, a range the importer reads, an allocator
  // event. Its times must be times (else false, with error_ naming the event); any other event is
  // counted by category.
  bool finish_event() {
    const int64_t index = t_.events++;  // its position in traceEvents
    const std::string_view cat = category(ev_.cat);
    const bool x = ev_.ph == "X";
    const bool gpu = x && (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset");
    const bool launch = x && (cat == "cuda_runtime" || cat == "cuda_driver") && ev_.correlation >= 0;
    const bool range = x && (cat == "user_annotation" || cat == "cpu_op") &&
                       (starts_with(ev_.name, "FSDP::") || starts_with(ev_.name, "ProfilerStep#") ||
                        starts_with(ev_.name, "Optimizer.step#") || ev_.name.find("clip_grad_norm") != std::string::npos);
    const bool memory = !gpu && !launch && !range && ev_.name == "[memory]" && ev_.has_bytes;
    // Known profiler output, not corruption: GPU activities with "ts" 0 and "dur" 0
    // (pytorch/kineto#109, thousands per file) and with a negative "dur" (pytorch/kineto#646) are
    // dropped and counted, as the profiler could not time them.
    // (dur_ns is only ever set from a number: a negative one is such a "dur".)
    if (gpu && ev_.has_ts && ev_.has_dur && ev_.bad_ts.empty() && ((ev_.ts_ns == 0 && ev_.dur_ns == 0 && ev_.bad_dur.empty()) || ev_.dur_ns < 0)) {
      skip(std::string(cat) + (ev_.dur_ns < 0 ? " (negative dur, dropped)" : " (ts 0 and dur 0, dropped)"));
      ++t_.dropped_gpu_activities;
      return true;
    }
    if (gpu || launch || range || memory) {
      std::string why = !ev_.has_ts ? "has no \"ts\"" : ev_.bad_ts;
      if (why.empty() && !memory) why = !ev_.has_dur ? "has no \"dur\"" : ev_.bad_dur;
      if (!why.empty()) {
        const std::string name = ev_.name.size() > 60 ? ev_.name.substr(0, 57) + "..." : ev_.name;
        error_ = "traceEvents[" + std::to_string(index) + "] (" + std::string(cat) + " \"" + name + "\"): " + why +
                 " (a corrupt trace)";
        return false;
      }
    }
    if (gpu) {
      GpuActivity a;
      a.ts_ns = ev_.ts_ns;
      a.dur_ns = ev_.dur_ns;
      a.correlation = ev_.correlation;
      a.stream = static_cast<int>(std::clamp<int64_t>(ev_.stream >= 0 ? ev_.stream : ev_.tid, -1, 1 << 30));
      a.device = static_cast<int>(std::clamp<int64_t>(ev_.device, -1, 1 << 30));
      a.name = intern(ev_.name);
      a.kind = cat == "kernel" ? ActivityKind::Kernel : cat == "gpu_memcpy" ? ActivityKind::Memcpy : ActivityKind::Memset;
      if (a.kind == ActivityKind::Kernel && is_nccl_kernel_name(ev_.name)) {
        CollectiveInfo info = std::move(ev_.collective);
        if (!ev_.ranks_text.empty()) {
          std::optional<std::vector<int>> ranks = parse_rank_list(ev_.ranks_text);
          if (ranks) info.group_ranks = std::move(*ranks);
          else ev_.bad_count = "\"Process Group Ranks\" holds a number above " + std::to_string(kMaxWorldRanks - 1) + ", not a rank";
        }
        // The profiler shortens long rank lists ("[0, 8, 16, ..., 120, ...]"): expanded once the
        // world size is known (finish()).
        if (ev_.ranks_text.find("...") != std::string::npos) shortened_.push_back(t_.collectives.size());
        if (ev_.has_collective) {
          info.kind = comm_kind_from_collective_name(info.name);
        } else {
          info.kind = comm_kind_from_kernel_name(ev_.name);
          const size_t u = ev_.name.find('_');
          info.name = ev_.name.substr(u + 1, ev_.name.find_first_of("_(", u + 1) - u - 1);
        }
        // Corrupt, not absent, on a collective the import maps: a size check skipped would pass
        // it. (Another kind's fields, a broadcast's, are not read.)
        if (!ev_.bad_count.empty() && info.kind != CommKind::Other) {
          const std::string name = ev_.name.size() > 60 ? ev_.name.substr(0, 57) + "..." : ev_.name;
          error_ = "traceEvents[" + std::to_string(index) + "] (kernel \"" + name + "\"): " + ev_.bad_count + " (a corrupt trace)";
          return false;
        }
        a.collective = static_cast<int>(t_.collectives.size());
        t_.collectives.push_back(std::move(info));
        collective_event_.push_back(index);
      }
      t_.gpu.push_back(a);
      return true;
    }
    if (launch) {
      t_.launches.push_back(Launch{ev_.correlation, ev_.ts_ns, ev_.tid});
      return true;
    }
    if (range) {
      t_.ranges.push_back(CpuRange{ev_.ts_ns, ev_.dur_ns, ev_.tid, intern(ev_.name)});
      return true;
    }
    if (memory) {
      // A negative total is no total (the profiler leaves it out when it has none).
      t_.memory.push_back(MemoryEvent{ev_.ts_ns, ev_.bytes, std::max<int64_t>(-1, ev_.total_allocated),
                                      std::max<int64_t>(-1, ev_.total_reserved),
                                      static_cast<int>(std::clamp<int64_t>(ev_.device_type, -1, 127))});
      return true;
    }
    skip(cat.empty() ? "ph=" + ev_.ph : std::string(cat));
    return true;
  }

 public:
  // After the whole file (distributedInfo may follow the events): no NCCL kernel's "Group size"
  // above the world size (distributedInfo.world_size, else kMaxWorldRanks), and the shortened rank
  // lists expanded to `Group size` ranks at the stride of their first two, every rank inside
  // that world. Throws InputError(path) naming the kernel.
  void finish(const std::string& path) {
    const bool known = t_.world_size > 0 && t_.world_size <= kMaxWorldRanks;
    const int64_t world = known ? t_.world_size : kMaxWorldRanks;
    const std::string world_text =
        known ? "the trace's world size " + std::to_string(world) + " (distributedInfo.world_size)" : "the " + std::to_string(world) + " ranks a world may have";
    const auto kernel = [&](size_t c) { return "traceEvents[" + std::to_string(collective_event_[c]) + "] (an NCCL kernel): "; };
    for (size_t c = 0; c < t_.collectives.size(); ++c) {
      const int64_t size = t_.collectives[c].group_size;
      if (size > world) throw InputError(path, kernel(c) + "\"Group size\" is " + std::to_string(size) + ", more than " + world_text);
    }
    for (const size_t c : shortened_) {
      CollectiveInfo& info = t_.collectives[c];
      if (info.group_ranks.size() < 2 || info.group_size <= 0) continue;  // nothing to expand from: found by Group size
      const int64_t first = info.group_ranks[0], stride = static_cast<int64_t>(info.group_ranks[1]) - first;
      info.group_ranks.clear();
      if (stride <= 0) continue;
      const int64_t last = first + (info.group_size - 1) * stride;
      if (last >= world)
        throw InputError(path, kernel(c) + "\"Process Group Ranks\" (shortened) with \"Group size\" " + std::to_string(info.group_size) +
                                   " reaches rank " + std::to_string(last) + ", beyond " + world_text);
      info.group_ranks.reserve(static_cast<size_t>(info.group_size));
      for (int64_t r = first; r <= last; r += stride) info.group_ranks.push_back(static_cast<int>(r));
    }
  }

 private:
  KinetoTrace& t_;
  std::vector<Ctx> stack_;
  std::string key_;
  PendingEvent ev_;
  std::unordered_map<std::string, int> ids_;
  bool saw_trace_events_ = false;
  std::string error_;
  std::vector<size_t> shortened_;         // collectives whose "Process Group Ranks" the profiler shortened
  std::vector<int64_t> collective_event_; // per collective: its position in traceEvents
};

}  // namespace

int64_t microseconds_text_to_ns(std::string_view text, double value) {
  if (text.find_first_of("eE") != std::string_view::npos || text.size() > 30) {
    const double ns = value * 1000.0;
    return std::abs(ns) < 9e18 ? std::llround(ns) : (ns < 0 ? INT64_MIN : INT64_MAX);
  }
  bool negative = false;
  size_t i = 0;
  if (i < text.size() && text[i] == '-') {
    negative = true;
    ++i;
  }
  int64_t whole = 0;
  for (; i < text.size() && text[i] != '.'; ++i) {
    if (whole > (INT64_MAX / 1000 - 9) / 10) return negative ? INT64_MIN : INT64_MAX;
    whole = whole * 10 + (text[i] - '0');
  }
  int64_t fraction = 0;
  int digits = 0;
  bool round_up = false;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size(); ++i, ++digits) {
      if (digits < 3) fraction = fraction * 10 + (text[i] - '0');
      else if (digits == 3) round_up = text[i] >= '5';
    }
  }
  for (int d = std::min(digits, 3); d < 3; ++d) fraction *= 10;
  const int64_t ns = whole * 1000 + fraction + (round_up ? 1 : 0);
  return negative ? -ns : ns;
}

KinetoTrace read_trace(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw InputError(path, "no such file; expected a PyTorch profiler trace (.json or .json.gz)");
  if (!fs::is_regular_file(status)) throw InputError(path, "is not a regular file; expected a PyTorch profiler trace (.json or .json.gz)");
  KinetoTrace trace;
  trace.path = path;
  GzipFileBuf buf(path);
  std::istream in(&buf);
  TraceSax sax(trace);
  const bool ok = json::sax_parse(in, &sax, json::input_format_t::json, true, false);
  if (!ok) throw InputError(path, sax.error().empty() ? "is not a PyTorch profiler trace" : sax.error());
  if (!sax.saw_trace_events())
    throw InputError(path, "has no \"traceEvents\" array: expected a PyTorch profiler (Chrome-trace JSON) file");
  sax.finish(path);
  return trace;
}

std::vector<KinetoTrace> read_traces(const std::vector<std::string>& paths, int jobs) {
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const size_t n = paths.size();
  std::vector<KinetoTrace> traces(n);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        traces[i] = read_trace(paths[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min<int>(jobs, static_cast<int>(n)); ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return traces;
}

}  // namespace shardline::kineto
