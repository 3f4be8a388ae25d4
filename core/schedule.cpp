// The shared scheduler. Every FSDP/HSDP/ZeRO-3 rule the project models lives here and only
// here; see ../shared/reference/fsdp-semantics.md and docs/schedule.md for the rules in prose.
#include "core/schedule.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "core/units.h"
#include "core/invariant.h"

namespace shardline {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A communication bucket: what one fused collective moves. Its slices (shard-local element
// space) are `list` in the Program's shared slice lists, appended there as it is packed; its
// units, every unit with a slice in it in forward order, are `unit_count` entries of the
// packing's unit list from `units_begin` (a hundred thousand buckets hold one or two units
// each: no vector apiece).
struct Bucket {
  SliceList list;           // its slices in the Program's pool
  uint32_t list_index = 0;  // that range in Program::slice_list_ranges (Op::slice_list)
  int64_t shard_elems = 0;
  uint32_t units_begin = 0;
  uint32_t unit_count = 0;
  bool root = false;  // the FSDP root's parameter group: kept unsharded after forward
};

// The FSDP root forms one parameter group of all root units when every unit is its own bucket;
// byte buckets (ZeRO-3 / DDP style) have no root: each unit is packed in order like the others.
bool root_grouped(const UnitSpec& u, int64_t bucket_bytes) { return u.root && bucket_bytes == 0; }

// What the optimizer's for-loop steps over on the busiest rank of a shard group: how many local
// tensors (its launches per pass) and the largest one's elements (its temporary).
struct OptimizerTensors {
  int64_t count = 0;
  int64_t largest_numel = 0;
};

// FSDP2 (dtensor): every parameter's dim-0 shard. FSDP1 flattens each parameter group (a unit,
// or the root group) into one FlatParameter padded to the shard count and gives rank r the
// chunk [r C, (r + 1) C), C = ceil(total / shard): fsdp1_flat_params steps over those chunks;
// fsdp1_orig_params over the views of the parameters that overlap the rank's chunk (the others
// have no local elements and no gradient), counted per rank and taken at the busiest.
OptimizerTensors optimizer_tensors(const Scenario& s, const Program& p) {
  OptimizerTensors out;
  if (s.policy.optimizer_params == OptimizerParams::DTensor) {
    out.count = static_cast<int64_t>(p.params.size());
    for (const ParamInfo& param : p.params) out.largest_numel = std::max(out.largest_numel, param.shard_numel);
    return out;
  }
  // Parameter groups in the Program's parameter order: a unit's own, the root units' together.
  std::map<int, std::vector<int64_t>> groups;
  for (const ParamInfo& param : p.params) {
    const int group = root_grouped(s.model.units[param.unit], s.policy.bucket_bytes) ? -1 : param.unit;
    groups[group].push_back(param.numel);
  }
  const int64_t shards = s.mesh.shard;
  const bool flat = s.policy.optimizer_params == OptimizerParams::Fsdp1FlatParams;
  // Views per rank: a parameter at [a, b) of its group's flat parameter overlaps the chunks
  // a / C .. (b - 1) / C (a difference array over ranks, summed over groups).
  std::vector<int64_t> per_rank(flat ? 0 : static_cast<size_t>(shards) + 1, 0);
  for (const auto& [group, sizes] : groups) {
    const int64_t chunk = ceil_div(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}), shards);
    if (flat) {
      out.largest_numel = std::max(out.largest_numel, chunk);
      continue;
    }
    int64_t a = 0;
    for (const int64_t n : sizes) {
      if (n == 0) continue;
      const int64_t b = a + n, first = a / chunk, last = (b - 1) / chunk;
      per_rank[static_cast<size_t>(first)] += 1;
      per_rank[static_cast<size_t>(last) + 1] -= 1;
      const int64_t head = std::min(b, (first + 1) * chunk) - a, tail = b - std::max(a, last * chunk);
      out.largest_numel = std::max({out.largest_numel, head, tail, last - first >= 2 ? chunk : int64_t{0}});
      a = b;
    }
  }
  if (flat) {
    out.count = static_cast<int64_t>(groups.size());
    return out;
  }
  int64_t running = 0;
  for (int64_t r = 0; r < shards; ++r) out.count = std::max(out.count, running += per_rank[static_cast<size_t>(r)]);
  return out;
}

// Shard-local element capacity of one bucket for `unit` (INT64_MAX: the whole unit).
int64_t bucket_capacity(const UnitSpec& u, int64_t bucket_bytes, int64_t bytes_per_shard_elem) {
  const int64_t cap_bytes = u.bucket_bytes.value_or(bucket_bytes);
  return cap_bytes == 0 ? INT64_MAX : std::max<int64_t>(1, cap_bytes / bytes_per_shard_elem);
}

// A lower bound of the number of buckets pack_buckets makes, without making them: a bucket
// holds at most its capacity, so a unit needs at least floor(elements / capacity) of them, and
// a unit bucketed alone (its own bucket, or one bucket per unit) at least one.
int64_t min_bucket_count(const Scenario& s, const Program& p, int64_t bucket_bytes, int elem_bytes) {
  const int64_t bytes_per_shard_elem = static_cast<int64_t>(s.mesh.shard) * elem_bytes;
  std::vector<int64_t> elems(s.model.units.size(), 0);
  for (const auto& param : p.params) elems[param.unit] += param.shard_numel;
  int64_t count = 0, root_elems = 0;
  for (size_t u = 0; u < elems.size(); ++u) {
    if (root_grouped(s.model.units[u], bucket_bytes)) {
      root_elems += elems[u];  // one bucket for the whole root group
      continue;
    }
    const int64_t capacity = bucket_capacity(s.model.units[u], bucket_bytes, bytes_per_shard_elem);
    const bool alone = s.model.units[u].bucket_bytes.has_value() || bucket_bytes == 0;
    count += alone && elems[u] > 0 ? std::max<int64_t>(1, elems[u] / capacity) : elems[u] / capacity;
  }
  return count + (root_elems > 0 ? 1 : 0);
}

// Packs parameter slices (visited in `unit_order`) into buckets of at most `capacity_elems`
// shard-local elements, appending each bucket's slices to the Program's slice lists in bucket
// order. capacity 0: one bucket per unit. A unit with its own bucket_bytes is bucketed alone in
// chunks of that size. A group larger than a bucket is split. With one bucket per unit, the root
// units are one bucket, packed where the first of them is visited, listing every root unit
// (a tied head holds no tensor of its own but computes with the root's embedding).
std::vector<Bucket> pack_buckets(const Scenario& s, Program& p, const std::vector<int>& unit_order,
                                 int64_t bucket_bytes, int elem_bytes, std::vector<int>& unit_list) {
  const int64_t bytes_per_shard_elem = static_cast<int64_t>(s.mesh.shard) * elem_bytes;
  std::vector<std::vector<int>> params_of_unit(s.model.units.size());
  for (int i = 0; i < static_cast<int>(p.params.size()); ++i) params_of_unit[p.params[i].unit].push_back(i);

  std::vector<Bucket> buckets;
  buckets.reserve(static_cast<size_t>(min_bucket_count(s, p, bucket_bytes, elem_bytes)) + 1);
  auto start = [&](Bucket& b) {
    b = Bucket{};
    b.list.begin = static_cast<uint32_t>(p.slice_lists.size());
    b.units_begin = static_cast<uint32_t>(unit_list.size());
  };
  auto close = [&](Bucket& b) {
    if (b.list.count > 0) {
      b.list_index = p.add_slice_range(b.list);
      // Units listed in forward order.
      std::sort(unit_list.begin() + b.units_begin, unit_list.end());
      buckets.push_back(std::move(b));
    } else {
      unit_list.resize(b.units_begin);  // units listed for a bucket that holds nothing
    }
    start(b);
  };
  auto add_to = [&](Bucket& b, const TensorSlice& slice, int unit) {
    SHARDLINE_CHECK(p.slice_lists.size() + 1 < UINT32_MAX, "slice pool overflow");
    p.slice_lists.push_back(slice);
    ++b.list.count;
    b.shard_elems += slice.shard_numel;
    if (b.unit_count == 0 || unit_list.back() != unit) {
      unit_list.push_back(unit);
      ++b.unit_count;
    }
  };
  Bucket open;
  start(open);
  bool root_packed = false;
  for (int unit : unit_order) {
    const UnitSpec& u = s.model.units[unit];
    if (root_grouped(u, bucket_bytes)) {
      if (root_packed) continue;
      root_packed = true;
      close(open);
      // The root is gathered in the model's pre-forward and freed, its gradients reduced, in the
      // model's post-backward: the bucket lists the first unit too when it is not a root unit.
      if (!root_grouped(s.model.units[0], bucket_bytes)) {
        unit_list.push_back(0);
        ++open.unit_count;
      }
      for (int r = 0; r < static_cast<int>(s.model.units.size()); ++r) {
        if (!root_grouped(s.model.units[r], bucket_bytes)) continue;
        for (int param : params_of_unit[r]) add_to(open, TensorSlice{param, 0, p.params[param].shard_numel}, r);
        if (params_of_unit[r].empty()) {
          unit_list.push_back(r);
          ++open.unit_count;
        }
      }
      open.root = true;
      close(open);
      continue;
    }
    const bool alone = u.bucket_bytes.has_value() || bucket_bytes == 0;
    const int64_t capacity = bucket_capacity(u, bucket_bytes, bytes_per_shard_elem);
    if (alone) close(open);
    for (int param : params_of_unit[unit]) {
      int64_t offset = 0;
      const int64_t n = p.params[param].shard_numel;
      while (offset < n) {
        if (open.shard_elems >= capacity) close(open);
        const int64_t take = std::min(n - offset, capacity - open.shard_elems);
        add_to(open, TensorSlice{param, offset, take}, unit);
        offset += take;
      }
    }
    if (alone) close(open);
  }
  close(open);
  return buckets;
}

// What makes one micro-batch's ops: the bucket size when the policy buckets, else the units.
std::string size_key_of_one_micro_batch(const Scenario& s) {
  if (s.policy.bucket_bytes > 0) return "policy.bucket_bytes";
  return s.model.transformer ? "model.transformer.layers" : "model.units";
}

// The refusal names the scenario key that made the Program large: micro-batches when one
// micro-batch alone would fit, else the bucket size when there are buckets, else the model.
InputError too_many_ops(const Scenario& s, double ops, double ops_one_micro_batch) {
  char n[32];
  std::snprintf(n, sizeof n, "%.1f", ops / 1e6);
  const std::string limit = std::to_string(kMaxProgramOps / 1'000'000) + " million ops";
  const std::string what = (ops > static_cast<double>(kMaxProgramOps) ? std::string("this step makes at least ") + n + " million ops, more than the "
                                                                      : std::string("this step makes more than the ")) +
                           limit + " shardline schedules (about 100 bytes of memory each while simulated); ";
  // One micro-batch may fit by the estimate (a lower bound) and still not: with buckets, larger
  // buckets are the other way out, and both are said.
  const std::string buckets_now = s.policy.bucket_bytes > 0 ? "now " + format_bytes(s.policy.bucket_bytes) : "";
  if (s.policy.micro_batches > 1 && ops_one_micro_batch <= static_cast<double>(kMaxProgramOps))
    return InputError("policy.micro_batches", what + "use fewer micro-batches (now " + std::to_string(s.policy.micro_batches) + ")" +
                                                  (s.policy.bucket_bytes > 0 ? " or larger buckets (policy.bucket_bytes, " + buckets_now + ")" : ""));
  const std::string key = size_key_of_one_micro_batch(s);
  return InputError(key, what + (key == "policy.bucket_bytes" ? "use larger buckets (" + buckets_now + ")" : "use fewer units"));
}

// Emits ops into a Program, tracking per-stream state: the last op on each stream and the
// event waits a stream has been told to honor (applied to its next op: streams are FIFO).
class Emitter {
 public:
  Emitter(const Scenario& s, Program& p) : s_(s), p_(p) { last_on_.fill(-1); }

  // Emits `op` depending on `deps` and on what its stream was told to wait for.
  int emit(Op op, std::initializer_list<int> deps = {}) {
    const int id = static_cast<int>(p_.ops.size());
    auto& waits = pending_[static_cast<int>(op.stream)];
    deps_.assign(deps.begin(), deps.end());
    deps_.insert(deps_.end(), waits.begin(), waits.end());
    waits.clear();
    std::sort(deps_.begin(), deps_.end());
    deps_.erase(std::unique(deps_.begin(), deps_.end()), deps_.end());
    // A dependency on an earlier op of the same stream is implied by FIFO order.
    const int prev = last_on_[static_cast<int>(op.stream)];
    deps_.erase(std::remove_if(deps_.begin(), deps_.end(),
                               [&](int d) { return d < 0 || (d <= prev && p_.ops[d].stream == op.stream); }),
                deps_.end());
    for (int d : deps_) SHARDLINE_CHECK(d < id, "dependency on a later op");
    // The estimate before building is a lower bound; the Program itself stops at the limit too.
    if (static_cast<int64_t>(p_.ops.size()) >= kMaxProgramOps) {
      const double ops = static_cast<double>(kMaxProgramOps);
      throw too_many_ops(s_, ops, p_.micro_batches > 1 ? ops / p_.micro_batches : ops);
    }
    last_on_[static_cast<int>(op.stream)] = id;
    return p_.append_op(std::move(op), deps_);
  }
  // `stream` waits for event `op_id` (cudaStreamWaitEvent): its next op depends on it.
  void wait(StreamId stream, int op_id) {
    if (op_id >= 0) pending_[static_cast<int>(stream)].push_back(op_id);
  }
  int last_on(StreamId stream) const { return last_on_[static_cast<int>(stream)]; }

 private:
  const Scenario& s_;
  Program& p_;
  std::array<int, kNumStreams> last_on_{};
  std::array<std::vector<int>, kNumStreams> pending_;
  std::vector<int> deps_;  // scratch: the dependencies of the op being emitted
};

enum class ParamState { Sharded, Gathering, Unsharded, ReshardedToGroup };

class Scheduler {
 public:
  explicit Scheduler(const Scenario& s) : s_(s), em_(s, p_) {}

  Program run() {
    setup_program();
    const int U = static_cast<int>(s_.model.units.size());
    std::vector<int> forward_order(U), backward_order(U);
    for (int i = 0; i < U; ++i) forward_order[i] = i, backward_order[i] = U - 1 - i;
    const int param_bytes = dtype_bytes(p_.param_dtype);
    const int reduce_bytes = dtype_bytes(p_.reduce_dtype);
    // Refuse before packing, on a lower bound of the op count: each micro-batch runs every
    // unit forward and backward and gathers every all-gather bucket, twice when parameters
    // are resharded after forward (each gather: buffer alloc, all-gather, free, and with
    // fusion the copy-out, and without zero-copy the copy-in); every reduce-scatter bucket is
    // reduced once per gradient sync (alloc, reduce-scatter, free, and with fusion the copy-in).
    const bool fused = s_.policy.comm_fusion;
    const double ops_per_gather = 3.0 + (fused ? 1.0 : 0.0) + (fused && !s_.policy.zero_copy ? 1.0 : 0.0);
    const double gathers = s_.policy.reshard_after_forward.mode == ReshardAfterForward::Mode::Keep ? 1.0 : 2.0;
    const double syncs = s_.policy.grad_sync == GradSync::Every ? p_.micro_batches : 1.0;
    // Buckets kept unsharded after forward (the root's, a unit's own reshard_after_forward
    // false) gather once: at most one per such unit with one bucket per unit (the root group is
    // one); with byte buckets, a kept unit may keep any number, so the bound counts one gather
    // for every bucket then.
    const double ag_buckets = static_cast<double>(min_bucket_count(s_, p_, s_.policy.bucket_bytes, param_bytes));
    double kept_buckets = 0;
    bool root_counted = false;
    for (const UnitSpec& u : s_.model.units) {
      if (u.params() == 0) continue;
      if (root_grouped(u, s_.policy.bucket_bytes)) {
        if (!root_counted && !s_.policy.root_reshard_after_forward) kept_buckets += 1;
        root_counted = true;
      } else if (u.reshard_after_forward && !*u.reshard_after_forward) {
        kept_buckets += s_.policy.bucket_bytes == 0 ? 1 : ag_buckets;
      }
    }
    const double gathered = gathers == 1.0 ? ag_buckets : 2.0 * ag_buckets - std::min(kept_buckets, ag_buckets);
    // Per unit and micro-batch: its forward and backward compute, and the alloc and free of each
    // kind of memory it holds (forward() and backward() emit them); 2 ops a unit had been counted
    // where the shorthand's blocks make about 8, so 400,000 layers passed this bound and were
    // refused only at the build's own stop, after seconds and 1.9 GB.
    double unit_ops = 0;
    for (const UnitSpec& u : s_.model.units) {
      unit_ops += 2.0;
      for (int64_t bytes : {u.activation_bytes, u.output_bytes, u.loss_activation_bytes, u.forward_transient_bytes,
                            u.backward_transient_bytes, u.loss_backward_transient_bytes})
        if (bytes > 0) unit_ops += 2.0;
    }
    const double per_micro_batch = ops_per_gather * gathered + unit_ops;
    const double per_sync = (fused ? 4.0 : 3.0) * static_cast<double>(min_bucket_count(s_, p_, s_.policy.bucket_bytes, reduce_bytes));
    const double at_least = per_micro_batch * p_.micro_batches + per_sync * syncs;
    if (at_least > static_cast<double>(kMaxProgramOps)) throw too_many_ops(s_, at_least, per_micro_batch + per_sync);
    ag_ = pack_buckets(s_, p_, forward_order, s_.policy.bucket_bytes, param_bytes, bucket_units_);
    rs_ = pack_buckets(s_, p_, backward_order, s_.policy.bucket_bytes, reduce_bytes, bucket_units_);
    // A vector of millions of ops grown by doubling ends up to twice its size: allocate the
    // ops once, at an estimate from the packed buckets.
    const size_t expected = expected_op_count(gathers, syncs);
    p_.ops.reserve(expected);
    p_.dep_ids.reserve(expected * 3 / 4);  // about 0.4-0.6 dependencies per op
    p_.host_launches.reserve(expected);
    ag_of_unit_.assign(U, {});
    for (int b = 0; b < static_cast<int>(ag_.size()); ++b)
      for (int u : units_of(ag_[b])) ag_of_unit_[u].push_back(b);
    rs_done_at_unit_.assign(U, {});
    rs_first_at_unit_.assign(U, {});
    for (int b = 0; b < static_cast<int>(rs_.size()); ++b) {
      // Gradients of a bucket are ready when its last unit in backward order (lowest index) ends;
      // they are first written by its first unit in backward order (the highest index).
      rs_done_at_unit_[units_of(rs_[b]).front()].push_back(b);
      rs_first_at_unit_[units_of(rs_[b]).back()].push_back(b);
    }

    reshard_mode_.clear();
    for (const Bucket& b : ag_) reshard_mode_.push_back(reshard_mode_of(b));
    ag_state_.assign(ag_.size(), ParamState::Sharded);
    ag_op_.assign(ag_.size(), -1);
    reshard_event_.assign(ag_.size(), -1);
    ag_buffer_pool_.assign(ag_.size(), StreamId::CopyIn);
    params_pool_.assign(ag_.size(), StreamId::Compute);
    grads_allocated_.assign(rs_.size(), false);
    grad_shard_allocated_.assign(rs_.size(), false);
    root_rs_bucket_ = -1;
    for (int b = 0; b < static_cast<int>(rs_.size()); ++b)
      if (rs_[b].root) root_rs_bucket_ = b;
    root_grad_slice_allocated_.assign(root_rs_bucket_ >= 0 ? rs_[root_rs_bucket_].list.count : 0, false);
    for (int mb = 0; mb < p_.micro_batches; ++mb) {
      forward(mb);
      backward(mb);
    }
    finalize();
    return std::move(p_);
  }

 private:
  // What the step below emits, from the packed buckets: per gather of an all-gather bucket
  // (fused: buffer alloc, copy-in, all-gather, params alloc, copy-out, two frees; unfused: params
  // alloc, one all-gather per parameter, free; partial reshard: two more), per reduction of a
  // reduce-scatter bucket (fused: two allocs, copy-in, reduce-scatter, two frees and the
  // all-reduce; unfused: one reduce-scatter and all-reduce per parameter), per unit and
  // micro-batch the compute and activation ops. Close to exact, for the allocation only.
  size_t expected_op_count(double gathers, double syncs) const {
    const bool fused = s_.policy.comm_fusion;
    const bool partial = s_.policy.reshard_after_forward.mode == ReshardAfterForward::Mode::Partial;
    const bool hsdp = s_.mesh.replicate > 1;
    double per_micro_batch = 8.0 * static_cast<double>(s_.model.units.size());
    for (const Bucket& b : ag_)
      per_micro_batch += gathers * ((fused ? 7.0 : 2.0 + b.list.count) + (partial ? 2.0 : 0.0));
    double per_sync = 0;
    for (const Bucket& b : rs_) per_sync += fused ? 6.0 + (hsdp ? 1.0 : 0.0) : 2.0 + b.list.count * (hsdp ? 2.0 : 1.0);
    return static_cast<size_t>(per_micro_batch * p_.micro_batches + per_sync * syncs) + 16;
  }

  // ---- set-up --------------------------------------------------------------------------
  // A unit computing for over an hour per micro-batch comes from inputs that are each in range
  // but together absurd (1e21 FLOPs at 0.1% of a CPU core's peak ran as a 1e19 us step):
  // refused, naming what to check.
  void check_compute_times() const {
    constexpr double kMaxUnitComputeUs = 3.6e9;
    for (size_t u = 0; u < unit_us_.size(); ++u) {
      const double longest = std::max(unit_us_[u].forward_us, unit_us_[u].backward_us);
      if (longest <= kMaxUnitComputeUs) continue;
      // For the shorthand the unit's work comes from its shape: name the knobs that set it.
      const auto& t = s_.model.transformer;
      const std::string what = t ? "its shape (seq_len " + std::to_string(t->seq_len) + " x micro_batch_size " +
                                       std::to_string(t->micro_batch_size) + " tokens, hidden " + std::to_string(t->hidden) +
                                       ", ffn_hidden " + std::to_string(t->ffn_hidden) + ", vocab " + std::to_string(t->vocab) + ")"
                                 : "its forward_flops / forward_time and backward_flops / backward_time (a backward not "
                                   "given is twice the forward)";
      throw InputError(t ? "model.transformer" : "model.units[" + std::to_string(u) + "]",
                       "unit \"" + s_.model.units[u].name + "\" would compute for " + format_time_us(longest) +
                           " per micro-batch, over an hour; check " + what + ", cluster.gpu.peak_tflops, "
                           "cluster.gpu.hbm_bandwidth and the cluster.gpu efficiencies");
    }
  }

  void setup_program() {
    p_.scenario = s_.name;
    reshard_group_size_ = s_.policy.reshard_after_forward.mode == ReshardAfterForward::Mode::Partial
                              ? s_.policy.reshard_after_forward.group_size
                              : 0;
    p_.world_size = s_.mesh.shard * s_.mesh.replicate;
    p_.groups = fsdp_group_table(s_.mesh.shard, s_.mesh.replicate, reshard_group_size_);
    p_.streams = fsdp2_stream_table();
    p_.param_dtype = s_.policy.param_dtype;
    p_.reduce_dtype = s_.policy.reduce_dtype;
    p_.master_dtype = s_.policy.master_dtype;
    gradient_reduction_ = s_.policy.average_gradients ? Reduction::Avg : Reduction::Sum;
    p_.micro_batches = s_.policy.micro_batches;
    if (!s_.policy.comm_fusion && s_.policy.bucket_bytes > 0) {
      throw InputError("policy.bucket_bytes",
                       "bucketing packs groups into fused collectives; it needs policy.comm_fusion=true "
                       "(set bucket_bytes to 0 or enable comm_fusion)");
    }
    if (s_.model.transformer && s_.model.transformer->tied_embeddings && s_.policy.bucket_bytes > 0) {
      throw InputError("policy.bucket_bytes",
                       "byte buckets (ZeRO-3 style) with model.transformer.tied_embeddings are not modelled: the head "
                       "would compute with an embedding weight no bucket gathers for it; use one bucket per unit "
                       "(bucket_bytes 0: the embedding and the head share one group) or untied embeddings");
    }
    if (s_.policy.optimizer_params != OptimizerParams::DTensor && s_.policy.bucket_bytes > 0) {
      throw InputError("policy.optimizer_params",
                       "FSDP1's flat parameters are one per parameter group (bucket_bytes 0: one bucket per unit); "
                       "byte buckets (ZeRO-3 style) flatten differently and are not modelled: use \"dtensor\" or "
                       "bucket_bytes 0");
    }
    unit_us_ = unit_compute_us(s_);
    check_compute_times();
    // Sharded master parameters and optimizer states live all step; the sharded gradients only from
    // their reduce-scatter to the step's end (zero_grad(set_to_none=True), PyTorch's default),
    // alloc / free ops of their own.
    // FSDP1 (its optimizer steps over FSDP1's parameters) frees buffers that other streams use
    // through record_stream; FSDP2 keeps them alive itself and frees them on the host
    // (Program::memory_follows_streams).
    p_.memory_follows_streams = s_.policy.fsdp1_record_stream();
    const int64_t per_param_static = dtype_bytes(p_.master_dtype) + s_.policy.optimizer_bytes_per_param;
    for (int u = 0; u < static_cast<int>(s_.model.units.size()); ++u) {
      const UnitSpec& unit = s_.model.units[u];
      p_.units.push_back(unit.name);
      for (const TensorSpec& t : unit.tensors) {
        // FSDP2 shards each parameter on dim 0 and pads dim 0 to a multiple of the shard group
        // (a Llama 3 embedding's 128,256 rows over 512 ranks: 251 rows each, not 250.5; a 1,024-row
        // k projection over 2,048 ranks: one row each, twice its size); FSDP1's flat parameters
        // pad the elements (a shard of ceil(numel / shard)).
        const int64_t rows = t.rows > 0 ? t.rows : t.numel;
        SHARDLINE_CHECK(rows > 0 ? t.numel % rows == 0 : t.numel == 0, "a tensor whose numel is not a multiple of its rows");
        const int64_t shard_numel = s_.policy.optimizer_params == OptimizerParams::DTensor && rows > 0
                                        ? ceil_div(rows, s_.mesh.shard) * (t.numel / rows)
                                        : ceil_div(t.numel, s_.mesh.shard);
        ParamInfo info{unit.name + "." + t.name, u, t.numel, shard_numel};
        p_.static_memory_bytes += info.shard_numel * per_param_static;
        p_.params.push_back(std::move(info));
      }
    }
  }

  // ---- op helpers ----------------------------------------------------------------------
  // An op's label and label number (>= 0: printed after it, e.g. a bucket: "ag b" 12 -> "ag b12").
  // A string literal's label is looked up once and then found by its address (millions of ops
  // of small buckets share a few dozen labels).
  struct Label {
    Label(std::string t, int n = -1) : text(std::move(t)), number(n) {}
    Label(const char* t, int n = -1) : literal(t), number(n) {}
    const char* literal = nullptr;
    std::string text;  // when not a literal
    int number = -1;
  };
  // The label table's index of `prefix` + the label's text.
  int label_id(const Label& label, const char* prefix = "") {
    if (label.literal == nullptr) return p_.labels.add(prefix + label.text);
    for (const LiteralLabel& c : literal_labels_)
      if (c.literal == label.literal && std::string_view(c.prefix) == prefix) return c.id;
    const int id = p_.labels.add(std::string(prefix) + label.literal);
    literal_labels_.push_back({label.literal, prefix, id});
    return id;
  }
  Op make(OpKind kind, StreamId stream, const Label& label, const char* label_prefix = "") {
    Op op;
    op.kind = kind;
    op.stream = stream;
    op.phase = phase_;
    op.microbatch = mb_;
    op.label = label_id(label, label_prefix);  // the name is made when printed: label, number, " mb<k>"
    op.label_number = label.number;
    return op;
  }
  int memory_op(OpKind kind, StreamId stream, MemoryKind what, int64_t bytes, const Label& label,
                std::initializer_list<int> deps = {}, std::optional<StreamId> pool = std::nullopt) {
    Op op = make(kind, stream, label, kind == OpKind::Alloc ? kAllocPrefix : kFreePrefix);
    op.memory = what;
    op.set_bytes(bytes);
    op.pool = kind == OpKind::Alloc ? stream : pool ? *pool : pool_of(what);
    return em_.emit(std::move(op), deps);
  }
  // The caching allocator pool of what a free releases: the stream its alloc was issued on. Kinds
  // allocated on one stream only; the all-gather buffer and the unsharded parameters (copy-in or
  // all-gather stream, compute or all-gather stream, by policy) are given by their frees.
  static StreamId pool_of(MemoryKind what) {
    switch (what) {
      case MemoryKind::ReduceScatterBuffer:
      case MemoryKind::ShardedGrads:
        return StreamId::ReduceScatter;
      case MemoryKind::Activations:
      case MemoryKind::UnshardedGrads:
      case MemoryKind::OptimizerTemporary:
        return StreamId::Compute;
      default:
        SHARDLINE_UNREACHABLE("a free of this memory kind names its pool");
    }
  }
  int64_t bucket_bytes(const Bucket& b, DType dtype, int group_size) const {
    return b.shard_elems * group_size * dtype_bytes(dtype);
  }
  static Label bucket_label(const char* prefix, int b) { return Label(prefix, b); }
  static constexpr const char* kAllocPrefix = "alloc ";
  static constexpr const char* kFreePrefix = "free ";
  struct LiteralLabel {
    const char* literal;
    const char* prefix;
    int id;
  };
  std::vector<LiteralLabel> literal_labels_;

  // ---- data buffers (the Program's buffer table) ----------------------------------------
  // The scheduler's buffers: each is added to the table when an op first uses it, and its id
  // kept (collectives ask for theirs once each, millions of times on small buckets).
  enum Buffer { kParamShard, kUnshardedParams, kParamReshard, kUnshardedParamsReshard, kUnshardedGrads, kGradShard, kNumBuffers };
  int buffer(Buffer which, const char* name, CommGroup group, int blocks, DType dtype, BufferInit init) {
    int& id = buffer_ids_[which];
    if (id < 0) {
      p_.buffers.push_back(BufferInfo{name, dtype_bytes(dtype), static_cast<int>(group), blocks, init});
      id = static_cast<int>(p_.buffers.size()) - 1;
    }
    return id;
  }
  // All-gather: this rank's parameter shard (the same global values everywhere) into the
  // unsharded parameters, over the shard group or, after a partial reshard, the reshard group.
  void gather_buffers(Op& op, bool from_reshard_group) {
    const CommGroup g = from_reshard_group ? CommGroup::Reshard : CommGroup::Shard;
    op.src_buffer = from_reshard_group
                        ? buffer(kParamReshard, "param_reshard", g, 1, p_.param_dtype, BufferInit::Shared)
                        : buffer(kParamShard, "param_shard", g, 1, p_.param_dtype, BufferInit::Shared);
    op.dst_buffer = from_reshard_group
                        ? buffer(kUnshardedParamsReshard, "unsharded_params_reshard", g, reshard_group_size_,
                                 p_.param_dtype, BufferInit::None)
                        : buffer(kUnshardedParams, "unsharded_params", g, s_.mesh.shard, p_.param_dtype, BufferInit::None);
  }
  // Reduce-scatter: each rank's own unsharded gradients into the gradient shard; HSDP's
  // all-reduce then reduces the gradient shard in place.
  void reduce_scatter_buffers(Op& op) {
    op.src_buffer =
        buffer(kUnshardedGrads, "unsharded_grads", CommGroup::Shard, s_.mesh.shard, p_.reduce_dtype, BufferInit::PerRank);
    op.dst_buffer = grad_shard_buffer();
  }
  int grad_shard_buffer() {
    return buffer(kGradShard, "grad_shard", CommGroup::None, 1, p_.reduce_dtype, BufferInit::PerRank);
  }
  // Both all-gather streams (copy-in and all-gather) wait for `event` (FSDP2's
  // _wait_all_gather_streams_on_event).
  void wait_all_gather_streams(int event) {
    em_.wait(StreamId::CopyIn, event);
    em_.wait(StreamId::AllGather, event);
  }
  bool last_microbatch() const { return mb_ == p_.micro_batches - 1; }
  // Unsharded gradients: the param dtype, or the reduce dtype when they are accumulated over
  // micro-batches without a reduce-scatter (grad_sync "last").
  DType unsharded_grad_dtype() const {
    const bool accumulated = s_.policy.grad_sync == GradSync::Last && p_.micro_batches > 1;
    return accumulated && dtype_bytes(p_.reduce_dtype) > dtype_bytes(p_.param_dtype) ? p_.reduce_dtype : p_.param_dtype;
  }
  bool reduce_this_microbatch() const { return s_.policy.grad_sync == GradSync::Every || last_microbatch(); }
  std::span<const int> units_of(const Bucket& b) const { return {bucket_units_.data() + b.units_begin, b.unit_count}; }
  int unit_of(const Bucket& b) const { return b.unit_count == 1 ? bucket_units_[b.units_begin] : -1; }

  // ---- unshard: copy-in, all-gather (and later copy-out) ------------------------------
  void unshard(int b, bool prefetch_enabled) {
    if (ag_state_[b] == ParamState::Unsharded || ag_state_[b] == ParamState::Gathering) return;
    const Bucket& bucket = ag_[b];
    const bool from_reshard_group = ag_state_[b] == ParamState::ReshardedToGroup;
    const int group_size = from_reshard_group ? reshard_group_size_ : s_.mesh.shard;
    const int64_t full_bytes = bucket_bytes(bucket, p_.param_dtype, s_.mesh.shard);
    // Prefetch off: the gather of the next unit cannot overlap the current compute. Gathers the
    // loss unit's pre-backward issues come after the loss's backward (loss_stage_end_).
    const int gate = loss_stage_end_ >= 0 ? loss_stage_end_ : !prefetch_enabled ? last_compute_ : -1;  // -1: none
    if (from_reshard_group && reshard_event_[b] >= 0) {
      // The resharded copy is made on the compute stream after forward: the all-gather streams
      // wait for it before gathering from it.
      wait_all_gather_streams(reshard_event_[b]);
      reshard_event_[b] = -1;
    }
    if (s_.policy.comm_fusion) {
      const bool needs_copy_in = !s_.policy.zero_copy || p_.param_dtype != p_.master_dtype || from_reshard_group;
      const StreamId first_stream = needs_copy_in ? StreamId::CopyIn : StreamId::AllGather;
      memory_op(OpKind::Alloc, first_stream, MemoryKind::AllGatherBuffer, full_bytes, bucket_label("ag_buf b", b), {gate});
      ag_buffer_pool_[b] = first_stream;
      int copy_in = -1;
      if (needs_copy_in) {
        Op op = make(OpKind::CopyIn, StreamId::CopyIn,
                     bucket_label(s_.policy.zero_copy && !from_reshard_group ? "cast_in b" : "copy_in b", b));
        op.unit = unit_of(bucket);
        op.bucket = b;
        op.set_bytes(full_bytes / group_size);
        op.dtype = p_.param_dtype;
        op.slice_list = bucket.list_index;
        copy_in = em_.emit(std::move(op));
      }
      Op ag = make(OpKind::AllGather, StreamId::AllGather, bucket_label("ag b", b));
      ag.unit = unit_of(bucket);
      ag.bucket = b;
      ag.set_bytes(full_bytes);
      ag.dtype = p_.param_dtype;
      ag.group = from_reshard_group ? CommGroup::Reshard : CommGroup::Shard;
      ag.slice_list = bucket.list_index;
      gather_buffers(ag, from_reshard_group);
      ag_op_[b] = em_.emit(std::move(ag), {copy_in});
      if (copy_in >= 0) {
        p_.ops[copy_in].link = ag_op_[b];
        p_.ops[copy_in].src_buffer = p_.ops[ag_op_[b]].src_buffer;
      }
    } else {
      // Unfused: one all-gather per parameter, straight into the unsharded parameter.
      memory_op(OpKind::Alloc, StreamId::AllGather, MemoryKind::UnshardedParams, full_bytes,
                bucket_label("params b", b), {gate});
      params_pool_[b] = StreamId::AllGather;
      for (uint32_t k = 0; k < bucket.list.count; ++k) {
        const TensorSlice slice = p_.slice_lists[bucket.list.begin + k];
        Op ag = make(OpKind::AllGather, StreamId::AllGather, "ag " + p_.params[slice.param].name);
        ag.unit = p_.params[slice.param].unit;
        ag.bucket = b;
        ag.set_bytes(slice.shard_numel * group_size * dtype_bytes(p_.param_dtype));
        ag.dtype = p_.param_dtype;
        ag.group = from_reshard_group ? CommGroup::Reshard : CommGroup::Shard;
        ag.slice_list = p_.add_slice_range(SliceList{bucket.list.begin + k, 1});
        gather_buffers(ag, from_reshard_group);
        ag_op_[b] = em_.emit(std::move(ag));
      }
    }
    if (from_reshard_group) {
      // The partial shard (1/k of the bucket) is no longer needed once gathered.
      memory_op(OpKind::Free, StreamId::AllGather, MemoryKind::UnshardedParams, full_bytes / reshard_group_size_,
                bucket_label("resharded b", b), {}, StreamId::Compute);  // made on the compute stream after forward
    }
    ag_state_[b] = ParamState::Gathering;
  }

  // The compute stream waits for the all-gather; fused: copy-out on the compute stream.
  void wait_for_unshard(int b) {
    if (ag_state_[b] != ParamState::Gathering) return;
    const Bucket& bucket = ag_[b];
    const int64_t full_bytes = bucket_bytes(bucket, p_.param_dtype, s_.mesh.shard);
    if (!s_.policy.comm_fusion) {
      em_.wait(StreamId::Compute, ag_op_[b]);
      // The all-gathers issued after this point wait for the compute stream as the fused ones
      // wait for a copy-out: in implicit forward prefetch for the point where the previous
      // unit's parameters were ready (two units' gathers in flight at most), else for this one
      // (the compute op before this unit's). Without it the all-gather stream ran every gather
      // of the step ahead of compute, all units' parameters alive at once.
      const bool implicit = phase_ == Phase::Forward && s_.policy.forward_prefetch <= 1;
      if (implicit) {
        if (held_unfused_ready_ >= 0) em_.wait(StreamId::AllGather, held_unfused_ready_);
        held_unfused_ready_ = last_compute_;
      } else if (last_compute_ >= 0) {
        em_.wait(StreamId::AllGather, last_compute_);
      }
      ag_state_[b] = ParamState::Unsharded;
      return;
    }
    // In forward FSDP2 keeps each all-gather output until the next copy-out, whatever issued the
    // gather (wait_for_unshard tests the training state, FORWARD, not how the unshard came: its
    // docstring's "explicit prefetching frees at once" is not what the code does).
    const bool in_forward = phase_ == Phase::Forward;
    // The all-gather streams wait for the previous copy-out before the next copy-in may overwrite
    // memory, and the previous all-gather output is freed now.
    if (in_forward) flush_held_ag_buffer();
    memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::UnshardedParams, full_bytes, bucket_label("params b", b));
    params_pool_[b] = StreamId::Compute;
    Op out = make(OpKind::CopyOut, StreamId::Compute, bucket_label("copy_out b", b));
    out.unit = unit_of(bucket);
    out.bucket = b;
    out.set_bytes(full_bytes);
    out.dtype = p_.param_dtype;
    out.slice_list = bucket.list_index;
    out.link = ag_op_[b];
    out.dst_buffer = p_.ops[ag_op_[b]].dst_buffer;
    const int copy_out = em_.emit(std::move(out), {ag_op_[b]});
    // FSDP2 copies an all-gather's output out with one split_with_sizes_copy kernel; on one rank
    // it gathers nothing and casts each parameter into its unsharded tensor instead (a cast and a
    // copy per parameter; docs/compute-model.md, "The host").
    if (s_.mesh.shard == 1 && s_.policy.optimizer_params == OptimizerParams::DTensor)
      set_host_launches(copy_out, 2 * static_cast<int64_t>(bucket.list.count));
    if (in_forward) {
      held_ag_buffer_ = b;
      held_copy_out_ = copy_out;
      held_ag_bytes_ = full_bytes;
    } else {
      wait_all_gather_streams(copy_out);
      memory_op(OpKind::Free, StreamId::Compute, MemoryKind::AllGatherBuffer, full_bytes, bucket_label("ag_buf b", b), {}, ag_buffer_pool_[b]);
    }
    ag_state_[b] = ParamState::Unsharded;
  }

  // The held all-gather output, if any: the all-gather streams wait for its copy-out, then it is
  // freed (FSDP2's _wait_all_gather_streams_on_event and the release of all_gather_state).
  void flush_held_ag_buffer() {
    if (held_ag_buffer_ < 0) return;
    wait_all_gather_streams(held_copy_out_);
    memory_op(OpKind::Free, StreamId::Compute, MemoryKind::AllGatherBuffer, held_ag_bytes_,
              bucket_label("ag_buf b", held_ag_buffer_), {}, ag_buffer_pool_[held_ag_buffer_]);
    held_ag_buffer_ = -1;
    held_copy_out_ = -1;
  }

  // What a bucket does after forward: the root's is kept (FSDP1's _post_forward_reshard skips the
  // root; FSDP2's lazy init gives the root no post-forward mesh unless its fully_shard was given
  // reshard_after_forward explicitly, from PyTorch 2.8: policy.root_reshard_after_forward); a
  // unit's own reshard_after_forward overrides the policy (kept if any unit of the bucket keeps).
  ReshardAfterForward::Mode reshard_mode_of(const Bucket& b) const {
    if (b.root) return s_.policy.root_reshard_after_forward ? s_.policy.reshard_after_forward.mode : ReshardAfterForward::Mode::Keep;
    bool any_true = false;
    for (int u : units_of(b)) {
      const std::optional<bool>& own = s_.model.units[u].reshard_after_forward;
      if (own && !*own) return ReshardAfterForward::Mode::Keep;
      any_true = any_true || (own && *own);
    }
    return any_true ? ReshardAfterForward::Mode::Full : s_.policy.reshard_after_forward.mode;
  }

  void reshard(int b, bool after_forward) {
    const int64_t full_bytes = bucket_bytes(ag_[b], p_.param_dtype, s_.mesh.shard);
    const auto mode = reshard_mode_[b];
    if (after_forward && mode == ReshardAfterForward::Mode::Keep) return;
    memory_op(OpKind::Free, StreamId::Compute, MemoryKind::UnshardedParams, full_bytes, bucket_label("params b", b), {}, params_pool_[b]);
    if (after_forward && mode == ReshardAfterForward::Mode::Partial) {
      reshard_event_[b] = memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::UnshardedParams, full_bytes / reshard_group_size_,
                                    bucket_label("resharded b", b));
      ag_state_[b] = ParamState::ReshardedToGroup;
    } else {
      ag_state_[b] = ParamState::Sharded;
    }
  }

  int compute(int unit, bool backward) {
    const UnitSpec& u = s_.model.units[unit];
    Op op = make(OpKind::Compute, StreamId::Compute, std::string(backward ? "bwd " : "fwd ") + u.name);
    op.unit = unit;
    op.set_compute_us(backward ? unit_us_[unit].backward_us : unit_us_[unit].forward_us);
    op.recompute = backward && u.recompute_forward;
    last_compute_ = em_.emit(std::move(op));
    set_host_launches(last_compute_, backward ? unit_us_[unit].backward_launches : unit_us_[unit].forward_launches);
    return last_compute_;
  }

  // When a unit's model output (UnitSpec::output_bytes) is freed: held by the training loop to
  // the micro-batch's backward end (policy.output_lifetime backward); else, the loop dropping it
  // after the loss, once nothing needs it: after the unit's forward, or after its backward when
  // the loss saved it for that backward.
  enum class OutputFreed { Never, AfterForward, AfterItsBackward, AfterMicroBatchBackward };
  OutputFreed output_freed(const UnitSpec& u) const {
    if (u.output_bytes == 0) return OutputFreed::Never;
    if (s_.policy.output_lifetime == OutputLifetime::Backward) return OutputFreed::AfterMicroBatchBackward;
    return u.output_saved_by_loss ? OutputFreed::AfterItsBackward : OutputFreed::AfterForward;
  }
  void free_output(const UnitSpec& u) {
    memory_op(OpKind::Free, StreamId::Compute, MemoryKind::Activations, u.output_bytes, "out " + u.name);
  }

  // ---- forward --------------------------------------------------------------------------
  void forward(int mb) {
    mb_ = mb;
    phase_ = Phase::Forward;
    // The root's pre-forward: the all-gather streams wait for the compute stream (FSDP2's
    // _root_pre_forward, FSDP1's _wait_for_computation_stream), which at the end of the previous
    // micro-batch's backward waited for every reduction: no gather of this micro-batch overlaps
    // them. (The first micro-batch's would wait for the previous step's optimizer, not simulated.)
    if (mb > 0) wait_all_gather_streams(em_.last_on(StreamId::Compute));
    const int U = static_cast<int>(s_.model.units.size());
    const int depth = s_.policy.forward_prefetch;
    for (int i = 0; i < U; ++i) {
      // pre-forward(i): unshard what unit i needs unless prefetched, then wait for it.
      for (int b : ag_of_unit_[i]) unshard(b, depth > 0);
      for (int b : ag_of_unit_[i]) wait_for_unshard(b);
      // Explicit forward prefetch (depth >= 2): also unshard the next `depth` units now.
      if (depth >= 2) {
        for (int j = i + 1; j <= std::min(U - 1, i + depth); ++j)
          for (int b : ag_of_unit_[j]) unshard(b, true);
      }
      const UnitSpec& u = s_.model.units[i];
      if (u.activation_bytes > 0)
        memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::Activations, u.activation_bytes, "act " + u.name);
      if (u.output_bytes > 0)
        memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::Activations, u.output_bytes, "out " + u.name);
      if (u.loss_activation_bytes > 0)
        memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::Activations, u.loss_activation_bytes, "loss act " + u.name);
      if (u.forward_transient_bytes > 0)
        memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::Activations, u.forward_transient_bytes, "fwd tmp " + u.name);
      compute(i, false);
      if (u.forward_transient_bytes > 0)
        memory_op(OpKind::Free, StreamId::Compute, MemoryKind::Activations, u.forward_transient_bytes, "fwd tmp " + u.name);
      if (output_freed(u) == OutputFreed::AfterForward) free_output(u);
      // post-forward(i): reshard each bucket whose last user this was, as its mode says (the
      // root's and a unit's kept ones stay unsharded for backward: reshard_mode_of).
      for (int b : ag_of_unit_[i])
        if (units_of(ag_[b]).back() == i) reshard(b, true);
    }
    // The last FSDP state flushes the held all-gather output after forward, the all-gather
    // streams first waiting for its copy-out (FSDP2's root post-forward), so a backward gather
    // cannot overwrite it before it is drained.
    flush_held_ag_buffer();
    held_unfused_ready_ = -1;
  }

  // ---- backward -------------------------------------------------------------------------
  void backward(int mb) {
    mb_ = mb;
    phase_ = Phase::Backward;
    const int U = static_cast<int>(s_.model.units.size());
    const int depth = s_.policy.backward_prefetch;
    for (int i = U - 1; i >= 0; --i) {
      const UnitSpec& u = s_.model.units[i];
      // The loss's backward runs first, before any pre-backward hook (FSDP's hooks wait for the
      // gradient of the model's output): its tensors are gone before this unit's gathers and
      // prefetches. It takes no time of its own here; the unit's compute op below includes it.
      // The gathers and prefetches of this unit's pre-backward are issued after it (the caching
      // allocator counts on the host, where the hook runs after the loss's tensors are released).
      if (u.loss_backward_transient_bytes > 0) {
        memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::Activations, u.loss_backward_transient_bytes, "bwd loss tmp " + u.name);
        loss_stage_end_ = memory_op(OpKind::Free, StreamId::Compute, MemoryKind::Activations, u.loss_backward_transient_bytes,
                                    "bwd loss tmp " + u.name);
      }
      if (u.loss_activation_bytes > 0)
        loss_stage_end_ = memory_op(OpKind::Free, StreamId::Compute, MemoryKind::Activations, u.loss_activation_bytes, "loss act " + u.name);
      // pre-backward(i): unshard unless prefetched (or kept unsharded), wait, then prefetch
      // the previous `depth` units in post-forward order.
      for (int b : ag_of_unit_[i]) unshard(b, depth > 0);
      for (int b : ag_of_unit_[i]) wait_for_unshard(b);
      for (int j = i - 1; j >= std::max(0, i - depth); --j)
        for (int b : ag_of_unit_[j]) unshard(b, true);
      loss_stage_end_ = -1;

      // Unsharded gradients of each gradient bucket exist from the first backward compute
      // that writes them until their reduce-scatter copy-in (kept across micro-batches when
      // gradients are only synchronized on the last one: FSDP2's accumulated gradients, in the
      // reduce dtype, unsharded_grad_dtype).
      // The root's bucket spans units: FSDP2's gradients are per parameter, each made by the unit
      // that computes it (allocate_root_grads).
      // A unit whose backward transient counts the weight gradients it makes (a transformer
      // block) has its new gradient buckets allocated when that backward ends.
      auto allocate_grads = [&] {
        allocate_root_grads(i);
        for (int rb : rs_first_at_unit_[i]) {
          if (rs_[rb].root) continue;
          if (!grads_allocated_[rb]) {
            memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::UnshardedGrads,
                      bucket_bytes(rs_[rb], unsharded_grad_dtype(), s_.mesh.shard), bucket_label("grads rb", rb));
            grads_allocated_[rb] = true;
          }
        }
      };
      if (!u.backward_transient_makes_weight_grads) allocate_grads();
      if (u.backward_transient_bytes > 0)
        memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::Activations, u.backward_transient_bytes, "bwd tmp " + u.name);
      compute(i, true);
      if (u.backward_transient_bytes > 0)
        memory_op(OpKind::Free, StreamId::Compute, MemoryKind::Activations, u.backward_transient_bytes, "bwd tmp " + u.name);
      if (u.activation_bytes > 0)
        memory_op(OpKind::Free, StreamId::Compute, MemoryKind::Activations, u.activation_bytes, "act " + u.name);
      if (u.backward_transient_makes_weight_grads) allocate_grads();
      if (output_freed(u) == OutputFreed::AfterItsBackward) free_output(u);

      // post-backward(i): reshard buckets no unit still needs, then reduce ready gradients.
      for (int b : ag_of_unit_[i])
        if (units_of(ag_[b]).front() == i) reshard(b, false);
      if (reduce_this_microbatch())
        for (int rb : rs_done_at_unit_[i]) reduce(rb);
    }
    for (const UnitSpec& u : s_.model.units)
      if (output_freed(u) == OutputFreed::AfterMicroBatchBackward) free_output(u);
    if (reduce_this_microbatch() && !last_microbatch()) wait_for_reductions();
  }

  // The end of a backward that reduced gradients: the compute stream waits for every post-reduce
  // event (reduce-scatter, and HSDP's all-reduce) and frees the last reduce-scatter input. FSDP2's
  // root post-backward callback does this after every backward with is_last_backward (its
  // default; a trainer that sets it false on the first micro-batches keeps the buffer to the next
  // reduce-scatter, which shardline does not model); FSDP1's waits for its post-backward stream
  // after every backward that synchronizes gradients. The last micro-batch's runs in finalize.
  void wait_for_reductions() {
    // The all-gather streams wait for the same events: the next micro-batch's root pre-forward
    // makes them wait for the compute stream, which waits for these (with byte buckets no compute
    // op carries the wait before that forward, so the streams are told directly).
    for (int event : post_reduce_events_) {
      em_.wait(StreamId::Compute, event);
      wait_all_gather_streams(event);
    }
    post_reduce_events_.clear();
    if (prev_rs_op_ < 0) return;
    memory_op(OpKind::Free, StreamId::Compute, MemoryKind::ReduceScatterBuffer, prev_rs_bytes_,
              bucket_label("rs_buf rb", prev_rs_bucket_), {prev_rs_op_});
    prev_rs_op_ = -1;
  }

  // The root bucket's gradients unit i makes in its backward and that do not exist yet: those of
  // its own parameters, and a tied head's of the token embedding it shares (its first use in
  // backward). Allocated per parameter, as FSDP2 makes them, not the group's at once.
  void allocate_root_grads(int i) {
    if (root_rs_bucket_ < 0) return;
    const Bucket& bucket = rs_[root_rs_bucket_];
    const UnitSpec& u = s_.model.units[i];
    const bool tied_head = s_.model.transformer && s_.model.transformer->tied_embeddings && u.part == TransformerPart::Head;
    int64_t elems = 0;
    for (uint32_t k = 0; k < bucket.list.count; ++k) {
      if (root_grad_slice_allocated_[k]) continue;
      const TensorSlice& slice = p_.slice_lists[bucket.list.begin + k];
      const ParamInfo& param = p_.params[slice.param];
      const bool shared = tied_head && s_.model.units[param.unit].part == TransformerPart::Embedding &&
                          std::string_view(param.name).ends_with(kTokEmbeddings);
      if (param.unit != i && !shared) continue;
      root_grad_slice_allocated_[k] = true;
      elems += slice.shard_numel;
    }
    if (elems == 0) return;
    memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::UnshardedGrads,
              elems * s_.mesh.shard * dtype_bytes(unsharded_grad_dtype()), bucket_label("grads rb", root_rs_bucket_));
    grads_allocated_[root_rs_bucket_] = true;
  }
  static constexpr std::string_view kTokEmbeddings = "tok_embeddings.weight";

  void reduce(int rb) {
    const Bucket& bucket = rs_[rb];
    const int64_t rs_bytes = bucket_bytes(bucket, p_.reduce_dtype, s_.mesh.shard);
    const int64_t grad_bytes = bucket_bytes(bucket, unsharded_grad_dtype(), s_.mesh.shard);
    // FSDP2 (a bucket per unit): the compute stream waits for the previous reduce-scatter, so
    // only one reduce-scatter input is kept alive, freed here. Byte buckets (policy.bucket_bytes,
    // ZeRO-3 / DDP style) are a queue on the reduce-scatter stream instead: it waits for compute,
    // never the other way (DeepSpeed's reduce_and_partition_stream), and each bucket's input is
    // freed there after its reduce-scatter. Applying FSDP2's rule per bucket stalled compute
    // behind every bucket of a unit.
    const bool queued_buckets = s_.policy.bucket_bytes > 0;
    if (!queued_buckets && prev_rs_op_ >= 0) {
      memory_op(OpKind::Free, StreamId::Compute, MemoryKind::ReduceScatterBuffer, prev_rs_bytes_,
                bucket_label("rs_buf rb", prev_rs_bucket_), {prev_rs_op_});
      prev_rs_op_ = -1;
    }
    // The reduce-scatter stream waits for the compute stream (gradients ready).
    em_.wait(StreamId::ReduceScatter, em_.last_on(StreamId::Compute));
    // The bucket's gradient shard is made by its first reduce-scatter of the step (later ones
    // accumulate into it) and lives to the step's end. FSDP2's foreach_reduce allocates it (the
    // reduce-scatter output) only after the copy-in, once the unsharded gradients are released.
    const auto alloc_grad_shard = [&] {
      if (grad_shard_allocated_[rb]) return;
      const int64_t shard_bytes = bucket.shard_elems * dtype_bytes(p_.master_dtype);
      memory_op(OpKind::Alloc, StreamId::ReduceScatter, MemoryKind::ShardedGrads, shard_bytes, bucket_label("grad_shard rb", rb));
      grad_shard_allocated_[rb] = true;
      grad_shard_bytes_ += shard_bytes;
    };
    int rs_op = -1;
    std::vector<int> rs_ops;
    if (s_.policy.comm_fusion) {
      memory_op(OpKind::Alloc, StreamId::ReduceScatter, MemoryKind::ReduceScatterBuffer, rs_bytes,
                bucket_label("rs_buf rb", rb));
      Op in = make(OpKind::CopyIn, StreamId::ReduceScatter, bucket_label("rs_copy_in rb", rb));
      in.unit = unit_of(bucket);
      in.bucket = rb;
      in.set_bytes(rs_bytes);
      in.dtype = p_.reduce_dtype;
      in.slice_list = bucket.list_index;
      const int rs_copy_in = em_.emit(std::move(in));
      // FSDP2's foreach_reduce: "only after the copy-in finishes can we free the gradients, which
      // were computed in the default stream": the compute stream waits for the copy-in (PyTorch
      // 2.4-2.5: current_stream.wait_stream(reduce_scatter_stream) after it; since 2.6 the
      // copy-in runs on the compute stream itself), so it never overlaps the next backward. The
      // free marks that wait. Byte buckets (a queue the compute stream never waits for) and
      // FSDP1 (its reduce-scatter reads the flat gradient, record_stream) free on the
      // reduce-scatter stream.
      if (!queued_buckets && !s_.policy.fsdp1_record_stream()) {
        const int released =
            memory_op(OpKind::Free, StreamId::Compute, MemoryKind::UnshardedGrads, grad_bytes, bucket_label("grads rb", rb), {rs_copy_in});
        em_.wait(StreamId::ReduceScatter, released);  // the host allocates the shard after the release
      } else
        memory_op(OpKind::Free, StreamId::ReduceScatter, MemoryKind::UnshardedGrads, grad_bytes, bucket_label("grads rb", rb));
      alloc_grad_shard();
      Op rs = make(OpKind::ReduceScatter, StreamId::ReduceScatter, bucket_label("rs rb", rb));
      rs.unit = unit_of(bucket);
      rs.bucket = rb;
      rs.set_bytes(rs_bytes);
      rs.dtype = p_.reduce_dtype;
      rs.group = CommGroup::Shard;
      rs.reduction = gradient_reduction_;
      rs.slice_list = bucket.list_index;
      reduce_scatter_buffers(rs);
      rs_op = em_.emit(std::move(rs));
      p_.ops[rs_copy_in].link = rs_op;
      p_.ops[rs_copy_in].src_buffer = p_.ops[rs_op].src_buffer;
      rs_ops.push_back(rs_op);
      prev_rs_bytes_ = rs_bytes;
      if (queued_buckets)
        memory_op(OpKind::Free, StreamId::ReduceScatter, MemoryKind::ReduceScatterBuffer, rs_bytes, bucket_label("rs_buf rb", rb));
    } else {
      alloc_grad_shard();  // unfused: each parameter's reduce-scatter writes into it directly
      for (uint32_t k = 0; k < bucket.list.count; ++k) {
        const TensorSlice slice = p_.slice_lists[bucket.list.begin + k];
        Op rs = make(OpKind::ReduceScatter, StreamId::ReduceScatter, "rs " + p_.params[slice.param].name);
        rs.unit = p_.params[slice.param].unit;
        rs.bucket = rb;
        rs.set_bytes(slice.shard_numel * s_.mesh.shard * dtype_bytes(p_.reduce_dtype));
        rs.dtype = p_.reduce_dtype;
        rs.group = CommGroup::Shard;
        rs.reduction = gradient_reduction_;
        rs.slice_list = p_.add_slice_range(SliceList{bucket.list.begin + k, 1});
        reduce_scatter_buffers(rs);
        rs_op = em_.emit(std::move(rs));
        rs_ops.push_back(rs_op);
      }
      memory_op(OpKind::Free, StreamId::ReduceScatter, MemoryKind::UnshardedGrads, grad_bytes,
                bucket_label("grads rb", rb));
      prev_rs_bytes_ = 0;
    }
    grads_allocated_[rb] = false;
    if (bucket.root) root_grad_slice_allocated_.assign(root_grad_slice_allocated_.size(), false);
    prev_rs_op_ = queued_buckets ? -1 : rs_op;  // queued: its buffer is already freed
    prev_rs_bucket_ = rb;
    int post_reduce = rs_op;
    if (s_.mesh.replicate > 1) {
      // HSDP: the all-reduce stream waits for the reduce-scatter, then all-reduces the reduced
      // shard over the replicate group (one bucket per reduce-scatter bucket).
      for (size_t k = 0; k < rs_ops.size(); ++k) {
        const Op& rs = p_.ops[rs_ops[k]];
        Op ar = make(OpKind::AllReduce, StreamId::AllReduce,
                     s_.policy.comm_fusion ? bucket_label("ar rb", rb) : Label("ar " + p_.params[p_.slices(rs)[0].param].name));
        ar.unit = rs.unit;
        ar.bucket = rb;
        ar.set_bytes(rs.bytes() / s_.mesh.shard);
        ar.dtype = p_.reduce_dtype;
        ar.group = CommGroup::Replicate;
        ar.reduction = gradient_reduction_;
        ar.slice_list = rs.slice_list;
        ar.src_buffer = ar.dst_buffer = grad_shard_buffer();
        post_reduce = em_.emit(std::move(ar), {rs_ops[k]});
      }
    }
    post_reduce_events_.push_back(post_reduce);
  }

  // finalize: the compute stream waits for every post-reduce event; the step ends.
  void finalize() {
    phase_ = Phase::Finalize;
    mb_ = p_.micro_batches - 1;
    // The last micro-batch's reductions, as every earlier backward's; with no input held, a
    // 0-byte marker on the compute stream carries the waits (the step's end).
    const bool held = prev_rs_op_ >= 0;
    wait_for_reductions();
    if (!held) memory_op(OpKind::Free, StreamId::Compute, MemoryKind::ReduceScatterBuffer, 0, Label("step end"));
    // Parameters kept unsharded (reshard_after_forward=false with no backward) never exist
    // here: backward always reshards; so every allocation is matched by now.
    // Transformer shorthand: gradient clipping, then the optimizer step over this rank's shard,
    // on the compute stream once every gradient is reduced.
    int64_t shard_params = 0;
    for (const ParamInfo& param : p_.params) shard_params += param.shard_numel;
    const OptimizerTensors tensors = optimizer_tensors(s_, p_);
    end_of_step_compute("clip_grad_norm", grad_clip_compute(s_, shard_params, tensors.count));
    // What the optimizer step allocates beside its states: torch.optim's foreach AdamW computes
    // sqrt(v) for every local parameter at once (one state-sized copy of the shard), the
    // for-loop one parameter at a time, the fused kernel nothing.
    int64_t temporary = 0;
    if (s_.policy.optimizer_implementation == OptimizerImplementation::Foreach) temporary = shard_params;
    if (s_.policy.optimizer_implementation == OptimizerImplementation::ForLoop) temporary = tensors.largest_numel;
    temporary *= dtype_bytes(p_.master_dtype);
    const bool with_temporary = s_.model.transformer && temporary > 0;
    if (with_temporary)
      memory_op(OpKind::Alloc, StreamId::Compute, MemoryKind::OptimizerTemporary, temporary, "optimizer temporary");
    end_of_step_compute("optimizer_step", optimizer_step_compute(s_, shard_params, tensors.count));
    if (with_temporary)
      memory_op(OpKind::Free, StreamId::Compute, MemoryKind::OptimizerTemporary, temporary, "optimizer temporary");
    // zero_grad(set_to_none=True): the gradient shards go.
    if (grad_shard_bytes_ > 0)
      memory_op(OpKind::Free, StreamId::Compute, MemoryKind::ShardedGrads, grad_shard_bytes_, "grad_shards");
  }

  void end_of_step_compute(const char* name, const std::vector<TimedKernel>& kernels) {
    if (!s_.model.transformer) return;
    Op op = make(OpKind::Compute, StreamId::Compute, name);
    op.set_compute_us(total_us(kernels));
    last_compute_ = em_.emit(std::move(op));
    set_host_launches(last_compute_, total_launches(kernels));
  }

  void set_host_launches(int op, int64_t launches) {
    // program.json reads the count back as an int32.
    SHARDLINE_CHECK(launches >= 0 && launches <= INT32_MAX, "an op's launch count outside int32");
    p_.host_launches[static_cast<size_t>(op)] = static_cast<uint32_t>(launches);
  }

  const Scenario& s_;
  Program p_;
  int reshard_group_size_ = 0;  // > 0 when reshard_after_forward is an int
  Reduction gradient_reduction_ = Reduction::Avg;
  std::array<int, kNumBuffers> buffer_ids_ = [] {
    std::array<int, kNumBuffers> ids;
    ids.fill(-1);
    return ids;
  }();
  std::vector<UnitComputeTime> unit_us_;  // per unit, per micro-batch
  Emitter em_;
  std::vector<Bucket> ag_, rs_;
  std::vector<int> bucket_units_;  // every bucket's units (Bucket::units_begin)
  std::vector<std::vector<int>> ag_of_unit_;
  std::vector<std::vector<int>> rs_done_at_unit_;
  std::vector<std::vector<int>> rs_first_at_unit_;  // per unit: the gradient buckets it writes first, ascending
  std::vector<ParamState> ag_state_;
  std::vector<ReshardAfterForward::Mode> reshard_mode_;  // per all-gather bucket, after forward
  std::vector<int> ag_op_;
  std::vector<bool> grads_allocated_;
  // Per all-gather bucket, the stream its all-gather buffer and its unsharded parameters were
  // allocated on (their allocator pool), for their frees.
  std::vector<StreamId> ag_buffer_pool_, params_pool_;
  std::vector<bool> grad_shard_allocated_;  // per gradient bucket: its shard exists this step
  int64_t grad_shard_bytes_ = 0;            // of all of them, freed at the step's end
  int root_rs_bucket_ = -1;                        // the root's gradient bucket, if any
  std::vector<bool> root_grad_slice_allocated_;    // per slice of it: its gradient exists
  std::vector<int> post_reduce_events_;
  Phase phase_ = Phase::Forward;
  int mb_ = 0;
  int last_compute_ = -1;
  int loss_stage_end_ = -1;  // the loss's backward's last memory op while its unit's pre-backward runs
  int held_ag_buffer_ = -1, held_copy_out_ = -1;
  // Unfused implicit forward prefetch: the compute-stream point at which the previous unit's
  // parameters were ready (the analogue of the fused held copy-out).
  int held_unfused_ready_ = -1;
  // Per bucket resharded to a smaller group after forward: the op that made that copy; its
  // backward all-gather waits for it (FSDP2's reshard-after-forward event).
  std::vector<int> reshard_event_;
  int64_t held_ag_bytes_ = 0;
  int prev_rs_op_ = -1, prev_rs_bucket_ = -1;
  int64_t prev_rs_bytes_ = 0;
};

}  // namespace

std::string program_size_key(const Scenario& s, bool one_micro_batch_fits) {
  return s.policy.micro_batches > 1 && one_micro_batch_fits ? "policy.micro_batches" : size_key_of_one_micro_batch(s);
}

Program schedule(const Scenario& scenario) { return Scheduler(scenario).run(); }

std::vector<GroupInfo> fsdp_group_table(int shard, int replicate, int reshard) {
  std::vector<GroupInfo> groups(kNumCommGroups);
  auto set = [&](CommGroup g, int size, int stride) {
    groups[static_cast<size_t>(g)] = GroupInfo{std::string(comm_group_name(g)), size, stride};
  };
  set(CommGroup::None, 1, 1);
  set(CommGroup::Shard, shard, 1);
  set(CommGroup::Replicate, replicate, shard);
  set(CommGroup::Reshard, reshard > 0 ? reshard : 1, 1);
  return groups;
}

std::vector<StreamInfo> fsdp2_stream_table() {
  std::vector<StreamInfo> streams(kNumStreams);
  for (int s = 0; s < kNumStreams; ++s) {
    const auto id = static_cast<StreamId>(s);
    const bool high = id == StreamId::CopyIn || id == StreamId::AllGather || id == StreamId::ReduceScatter;
    streams[s] = StreamInfo{std::string(stream_name(id)), high ? -1 : 0};
  }
  return streams;
}

}  // namespace shardline
