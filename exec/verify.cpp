#include "exec/verify.h"

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "exec/payload.h"

namespace shardline::exec {

// Reduced stores (a reduction writes them) are followed op by op; they must start per_rank, so
// that every value is a sum of ranks' own values (Terms). A gathered store (an all-gather
// writes it) holds its gather's source blocks of every member.
Verifier::Verifier(const Plan& plan) : plan_(plan) {
  const Program& P = plan.program;
  history_.resize(plan.stores.size());
  gathered_from_.assign(plan.stores.size(), -1);
  for (const Op& op : P.ops) {
    if (!is_collective(op.kind)) continue;
    const OpPlan& o = plan.ops[static_cast<size_t>(P.id_of(op))];
    if (op.kind == OpKind::AllGather) {
      gathered_from_[o.dest_store] = o.source_store;
      continue;
    }
    const int src = o.source_store, dst = o.dest_store;
    for (int st : {src, dst}) {
      const BufferInfo& b = P.buffers[plan.stores[st].buffer];
      if (b.init != BufferInit::PerRank)
        throw InputError("program.buffers", "the data check needs the buffers a reduction reads and writes to start "
                                            "per_rank; \"" + b.name + "\" starts " + std::string(buffer_init_name(b.init)));
    }
    if (op.kind == OpKind::ReduceScatter && plan.stores[dst].blocks != 1)
      throw InputError("program.buffers", "a reduce-scatter writes one block");
    if (history_[dst].empty()) {
      history_[dst].resize(P.params.size());
      for (size_t p = 0; p < P.params.size(); ++p)
        history_[dst][p][0] = Segment{std::max<int64_t>(plan.stores[dst].extent[p], 1), {}};
    }
  }
}

Verifier::Terms Verifier::eval(int rank, int store, const std::vector<int>& writers, size_t k, int param) const {
  Terms t;
  if (k == 0) {
    // The store's initial per-rank values: rank's own element at its block's global position.
    const Store& s = plan_.stores[store];
    const GroupInfo& g = plan_.program.groups[plan_.program.buffers[s.buffer].group];
    t[{rank, g.index(rank) * s.extent[param]}] = 1.0;
    return t;
  }
  const Op& op = plan_.program.ops[writers[k - 1]];
  const GroupInfo& group = plan_.program.group_of(op);
  const auto members = group_members(group, rank);
  const double f = op.reduction == Reduction::Avg ? 1.0 / static_cast<double>(members.size()) : 1.0;
  if (op.kind == OpKind::ReduceScatter) {
    // Each member's own values of this rank's block of the (per-rank, one block per member) source.
    const Store& src = plan_.stores[plan_.ops[writers[k - 1]].source_store];
    const int64_t base = group.index(rank) * src.extent[param];
    for (int c : members) t[{c, base}] += f;
  } else {
    for (int m : members)
      for (const auto& [key, coeff] : eval(m, store, writers, k - 1, param)) t[key] += f * coeff;
  }
  return t;
}

std::vector<double> Verifier::expected_reduced(int store, int param, int64_t e0, int64_t count, int extra) const {
  std::vector<double> out(count, 0.0);
  const auto& segs = history_[store][param];
  auto it = segs.upper_bound(e0);
  if (it != segs.begin()) --it;
  for (; it != segs.end() && it->first < e0 + count; ++it) {
    const int64_t lo = std::max(e0, it->first), hi = std::min(e0 + count, it->second.end);
    if (lo >= hi) continue;
    std::vector<int> writers = it->second.writers;
    if (extra >= 0) writers.push_back(extra);
    const Terms terms = eval(plan_.rank, store, writers, writers.size(), param);
    for (int64_t e = lo; e < hi; ++e) {
      double v = 0;
      for (const auto& [key, coeff] : terms) v += coeff * grad_value(key.first, param, key.second + e);
      out[e - e0] = v;
    }
  }
  return out;
}

void Verifier::record_write(int store, int param, int64_t begin, int64_t end, int writer) {
  auto& segs = history_[store][param];
  auto split = [&](int64_t at) {
    auto it = segs.upper_bound(at);
    if (it == segs.begin()) return;
    --it;
    if (it->first == at || it->second.end <= at) return;
    Segment tail{it->second.end, it->second.writers};
    it->second.end = at;
    segs[at] = tail;
  };
  split(begin);
  split(end);
  for (auto it = segs.lower_bound(begin); it != segs.end() && it->first < end; ++it) it->second.writers.push_back(writer);
}

std::string Verifier::compare(int op_id, const void* base, int64_t element, const std::vector<double>& expected,
                              int width, int param, int block, int64_t local0, Backend& backend) {
  const int64_t n = static_cast<int64_t>(expected.size());
  if (n == 0) return {};
  std::vector<unsigned char> host(n * width);
  backend.download(host.data(), static_cast<const unsigned char*>(base) + element * width, n * width);
  elements_checked_ += n;
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double got = decode_value(host.data() + i * width, width);
    if (std::fabs(got - expected[i]) > value_tolerance(width, expected[i])) {
      if (first < 0) first = i;
      ++wrong;
    }
  }
  if (wrong == 0) return {};
  const Op& op = plan_.program.ops[op_id];
  std::ostringstream msg;
  msg << "data check failed on rank " << plan_.rank << ": op " << op_id << " \"" << plan_.program.name(op) << "\" ("
      << op_kind_name(op.kind) << " on stream " << stream_name(op.stream) << "): parameter " << param << " \""
      << plan_.program.params[param].name << "\" block " << block << " local element " << (local0 + first)
      << ": expected " << expected[first] << ", got " << decode_value(host.data() + first * width, width) << " ("
      << wrong << " of " << n << " elements of this slice wrong)";
  return msg.str();
}

std::string Verifier::check(int op_id, Backend& backend) {
  const Program& P = plan_.program;
  const Op& op = P.ops[op_id];
  const OpPlan& o = plan_.ops[op_id];
  const int rank = plan_.rank;
  std::string err;
  auto first_error = [&](std::string e) {
    if (err.empty()) err = std::move(e);
  };

  // Expected values of store `st` at (param, block, [e0, e0+count)) before op `extra` lands:
  // followed through its reductions, gathered from its gather's source on every member, or
  // what it held at the start.
  auto store_expected = [&](int st, int p, int j, int64_t e0, int64_t count, int extra) {
    if (!history_[st].empty()) return expected_reduced(st, p, e0, count, extra);
    std::vector<double> v(count);
    const int from = gathered_from_[st];
    if (from >= 0) {
      const GroupInfo& g = P.groups[P.buffers[plan_.stores[st].buffer].group];
      const int member = g.member(rank, j);
      for (int64_t t = 0; t < count; ++t) v[t] = initial_value(plan_, plan_.stores[from], member, p, 0, e0 + t);
      return v;
    }
    for (int64_t t = 0; t < count; ++t) v[t] = initial_value(plan_, plan_.stores[st], rank, p, j, e0 + t);
    return v;
  };

  if (op.kind == OpKind::CopyIn) {
    const int X = o.collective;
    const OpPlan& c = plan_.ops[X];
    const Store& src = plan_.stores[c.source_store];
    for (int j = 0; j < src.blocks; ++j)
      for (const auto& s : P.slices(op)) {
        const int64_t pos = slice_position(P, X, s);
        first_error(compare(op_id, c.in_buf, j * c.block_count + pos,
                            store_expected(c.source_store, s.param, j, s.shard_offset, s.shard_numel, -1), o.width,
                            s.param, j, s.shard_offset, backend));
      }
    return err;
  }
  if (is_collective(op.kind)) {
    const Store& dst = plan_.stores[o.dest_store];
    const bool grad = op.kind != OpKind::AllGather;
    const int out_blocks = op.kind == OpKind::AllGather ? o.blocks : 1;
    for (int j = 0; j < out_blocks; ++j)
      for (const auto& s : P.slices(op)) {
        if (s.shard_numel == 0) continue;
        const auto expected = store_expected(o.dest_store, s.param, j, s.shard_offset, s.shard_numel, grad ? op_id : -1);
        if (o.direct_out)
          first_error(compare(op_id, dst.data, dst.element_index(s.param, j, s.shard_offset), expected, o.width, s.param,
                              j, s.shard_offset, backend));
        else
          first_error(compare(op_id, o.out_buf, j * o.block_count + slice_position(P, op_id, s), expected, o.width,
                              s.param, j, s.shard_offset, backend));
      }
    if (grad && (o.direct_out || !o.unpack_spans.empty()))
      for (const auto& s : P.slices(op)) record_write(o.dest_store, s.param, s.shard_offset, s.shard_offset + s.shard_numel, op_id);
    return err;
  }
  if (op.kind == OpKind::CopyOut) {
    const int X = o.collective;
    const OpKind xk = P.ops[X].kind;
    const bool grad = xk != OpKind::AllGather;
    const Store& dst = plan_.stores[o.dest_store];
    for (int j = 0; j < dst.blocks; ++j)
      for (const auto& s : P.slices(op)) {
        if (s.shard_numel == 0) continue;
        const auto expected = store_expected(o.dest_store, s.param, j, s.shard_offset, s.shard_numel, grad ? X : -1);
        first_error(compare(op_id, dst.data, dst.element_index(s.param, j, s.shard_offset), expected, o.width, s.param,
                            j, s.shard_offset, backend));
      }
    if (grad)
      for (const auto& s : P.slices(op)) record_write(o.dest_store, s.param, s.shard_offset, s.shard_offset + s.shard_numel, X);
    return err;
  }
  return err;
}

}  // namespace shardline::exec
