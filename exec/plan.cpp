#include "exec/plan.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/error.h"
#include "exec/payload.h"
#include "core/invariant.h"

namespace shardline::exec {
namespace {


int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string op_path(int i) { return "program.ops[" + std::to_string(i) + "]"; }

std::string op_label(const Program& P, const Op& op) {
  return "op " + std::to_string(P.id_of(op)) + " \"" + P.name(op) + "\" (" + std::string(op_kind_name(op.kind)) + ")";
}

int64_t slice_total(std::span<const TensorSlice> slices) {
  int64_t n = 0;
  for (const auto& s : slices) n += s.shard_numel;
  return n;
}

}  // namespace

std::vector<int> group_members(const GroupInfo& group, int rank) {
  std::vector<int> m;
  for (int i = 0; i < group.size; ++i) m.push_back(group.member(rank, i));
  return m;
}

int64_t Plan::total_bytes() const {
  int64_t total = 0;
  for (const auto& s : stores) total += (s.elements + 1) * s.width;
  for (const auto& o : ops) {
    if (o.in_bytes) total += o.in_bytes + o.width;
    if (o.out_bytes) total += o.out_bytes + o.width;
  }
  return total;
}

int Plan::store_of_buffer(int buffer) const {
  for (size_t i = 0; i < stores.size(); ++i)
    if (stores[i].buffer == buffer) return static_cast<int>(i);
  return -1;
}

double initial_value(const Plan& plan, const Store& store, int rank, int param, int block, int64_t local) {
  const BufferInfo& b = plan.program.buffers[store.buffer];
  const int64_t position = store.blocks == 1 ? plan.program.groups[b.group].index(rank) : block;
  const int64_t global = position * store.extent[param] + local;
  switch (b.init) {
    case BufferInit::None: return kUnwrittenValue;
    case BufferInit::Shared: return param_value(param, global);
    case BufferInit::PerRank: return grad_value(rank, param, global);
  }
  return kUnwrittenValue;
}

Program scale_program(const Program& program, int64_t scale) {
  Program p = program;
  if (scale == 1) return p;
  for (auto& param : p.params) {
    param.numel = ceil_div(param.numel, scale);
    param.shard_numel = ceil_div(param.shard_numel, scale);
  }
  {  // every shared slice list once
    for (auto& s : p.slice_lists) {
      const int64_t end = ceil_div(s.shard_offset + s.shard_numel, scale);
      s.shard_offset = ceil_div(s.shard_offset, scale);
      s.shard_numel = end - s.shard_offset;
    }
  }
  return p;
}

Plan make_plan(const Program& input, int64_t scale, int rank, int world, int corrupt_op) {
  if (scale < 1) throw InputError("--scale", "must be a positive integer, got " + std::to_string(scale));
  Plan plan;
  plan.scale = scale;
  plan.rank = rank;
  plan.program = scale_program(input, scale);
  const Program& P = plan.program;
  if (P.groups.empty()) throw InputError("program.groups", "the program needs its group table");
  if (P.world_size != world) {
    std::string groups;
    for (const GroupInfo& g : P.groups)
      if (g.size > 1) groups += (groups.empty() ? "" : ", ") + g.name + " " + std::to_string(g.size);
    throw InputError("mpirun -n", "the program runs on " + std::to_string(P.world_size) + " ranks" +
                                      (groups.empty() ? "" : " (" + groups + ")") + ", but the run has " +
                                      std::to_string(world));
  }
  for (const GroupInfo& g : P.groups)
    if (g.size < 1 || g.stride < 1 || P.world_size % g.block() != 0)
      throw InputError("program.groups", "group \"" + g.name + "\": size x stride must divide the world size " +
                                             std::to_string(P.world_size));

  const int nops = static_cast<int>(P.ops.size());
  const int nparams = static_cast<int>(P.params.size());
  plan.ops.resize(nops);
  for (int i = 0; i < nops; ++i) {
    const Op& op = P.ops[i];
    if (!P.deps_valid(op) || op.slice_list >= P.slice_list_ranges.size() ||
        static_cast<size_t>(P.slice_list(op).begin) + P.slice_list(op).count > P.slice_lists.size())
      throw InputError(op_path(i), "its dependencies or slices run past the program's arrays");
    for (int d : P.deps(op))
      if (d < 0 || d >= i) throw InputError(op_path(i) + ".deps", "dependency " + std::to_string(d) + " is not an earlier op");
    const auto op_slices = P.slices(op);
    for (size_t k = 0; k < op_slices.size(); ++k) {
      const auto& s = op_slices[k];
      if (s.param < 0 || s.param >= nparams || s.shard_offset < 0 || s.shard_numel < 0)
        throw InputError(op_path(i) + ".slices[" + std::to_string(k) + "]", "names no valid parameter range");
    }
    if (is_collective(op.kind)) {
      if (static_cast<size_t>(op.group) >= P.groups.size())
        throw InputError(op_path(i) + ".group", "names no group of the group table");
      if ((op.kind == OpKind::AllGather) != (op.reduction == Reduction::None))
        throw InputError(op_path(i) + ".reduction", "an all-gather reduces nothing; a reduction needs sum or avg");
      if (op_slices.empty() && op.bytes() > 0)
        throw InputError(op_path(i) + ".slices", "a collective with bytes needs slices to place its data");
      const int w = dtype_bytes(op.dtype);
      if (op.kind != OpKind::AllGather && w == 1)
        throw InputError(op_path(i) + ".dtype", "reductions in 1-byte dtypes are not supported by the executor");
      plan.ops[i].width = w;
      plan.ops[i].blocks = P.group_size(op);
      plan.ops[i].block_count = slice_total(op_slices);
    }
  }

  // Copies: the Program links each to the collective it fills (copy-in) or drains (copy-out).
  for (int i = 0; i < nops; ++i) {
    const Op& op = P.ops[i];
    if (op.kind != OpKind::CopyIn && op.kind != OpKind::CopyOut) continue;
    const bool in = op.kind == OpKind::CopyIn;
    const int target = op.link;
    if (target < 0 || target >= nops || !is_collective(P.ops[target].kind) || (in ? target <= i : target >= i))
      throw InputError(op_path(i) + ".link", op_label(P, op) + (in ? " must link to the later collective it fills"
                                                                : " must link to the earlier collective it drains"));
    if (in && plan.ops[target].copy_in >= 0)
      throw InputError(op_path(i), op_label(P, op) + " and op " + std::to_string(plan.ops[target].copy_in) +
                                       " both fill collective " + std::to_string(target));
    plan.ops[i].collective = target;
    if (in) plan.ops[target].copy_in = i;
    else plan.ops[target].copy_outs.push_back(i);
  }

  // Stores: one per buffer of the Program's buffer table that an op reads or writes. A
  // collective's input is one block (all-gather, all-reduce) or one per member (reduce-scatter),
  // its output one per member (all-gather) or one (reduce-scatter, all-reduce).
  const int nbuffers = static_cast<int>(P.buffers.size());
  auto get_store = [&](int buffer, const char* key, int expected_blocks, int op) {
    if (buffer < 0 || buffer >= nbuffers)
      throw InputError(op_path(op) + "." + key, op_label(P, P.ops[op]) + " names no buffer of the buffer table");
    const BufferInfo& info = P.buffers[buffer];
    const GroupInfo& group = P.groups.at(static_cast<size_t>(info.group));
    const int blocks = info.blocks;
    if (blocks != 1 && blocks != group.size)
      throw InputError("program.buffers", "buffer \"" + info.name + "\" has " + std::to_string(blocks) +
                                              " blocks; 1 or its group's size " + std::to_string(group.size));
    if (blocks != expected_blocks || info.width != plan.ops[op].width)
      throw InputError(op_path(op) + "." + key, op_label(P, P.ops[op]) + " needs " + std::to_string(expected_blocks) +
                                                   " block(s) of " + std::to_string(plan.ops[op].width) +
                                                   "-byte elements; buffer \"" + info.name + "\" has " +
                                                   std::to_string(blocks) + " of " + std::to_string(info.width));
    int idx = plan.store_of_buffer(buffer);
    if (idx < 0) {
      Store s;
      s.buffer = buffer;
      s.width = info.width;
      s.blocks = blocks;
      s.extent.assign(nparams, 0);
      plan.stores.push_back(std::move(s));
      idx = static_cast<int>(plan.stores.size()) - 1;
    }
    return idx;
  };
  for (int i = 0; i < nops; ++i) {
    const Op& op = P.ops[i];
    OpPlan& o = plan.ops[i];
    if (!is_collective(op.kind)) continue;
    const bool one_block_in = op.kind != OpKind::ReduceScatter, one_block_out = op.kind != OpKind::AllGather;
    o.source_store = get_store(op.src_buffer, "src_buffer", one_block_in ? 1 : o.blocks, i);
    o.dest_store = get_store(op.dst_buffer, "dst_buffer", one_block_out ? 1 : o.blocks, i);
    if (op.kind == OpKind::AllReduce && o.source_store != o.dest_store)
      throw InputError(op_path(i) + ".dst_buffer", op_label(P, op) + " reduces in place: src_buffer and dst_buffer are one buffer");
  }
  for (int i = 0; i < nops; ++i) {
    OpPlan& o = plan.ops[i];
    const Op& op = P.ops[i];
    if (op.kind == OpKind::CopyIn || op.kind == OpKind::CopyOut) {
      const OpPlan& c = plan.ops[o.collective];
      o.width = c.width;
      if (op.kind == OpKind::CopyIn) o.source_store = c.source_store;
      else o.dest_store = c.dest_store;
    }
  }
  // Extents: every slice must fit in its store; a collective's source and destination share
  // extents per param (a gathered block is a shard's size).
  for (int i = 0; i < nops; ++i) {
    const OpPlan& o = plan.ops[i];
    for (int st : {o.source_store, o.dest_store}) {
      if (st < 0) continue;
      for (const auto& s : P.slices(P.ops[i]))
        plan.stores[st].extent[s.param] = std::max(plan.stores[st].extent[s.param], s.shard_offset + s.shard_numel);
    }
  }
  std::set<std::pair<int, int>> pairs;
  for (int i = 0; i < nops; ++i)
    if (is_collective(P.ops[i].kind) && plan.ops[i].source_store != plan.ops[i].dest_store)
      pairs.insert({plan.ops[i].source_store, plan.ops[i].dest_store});
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [a, b] : pairs)
      for (int p = 0; p < nparams; ++p) {
        int64_t& ea = plan.stores[a].extent[p];
        int64_t& eb = plan.stores[b].extent[p];
        if (ea != eb) {
          ea = eb = std::max(ea, eb);
          changed = true;
        }
      }
  }
  for (auto& s : plan.stores) {
    s.offset.assign(nparams, 0);
    int64_t off = 0;
    for (int p = 0; p < nparams; ++p) {
      s.offset[p] = off;
      off += s.blocks * s.extent[p];
    }
    s.elements = off;
  }

  // Position of a copy's slice inside its collective's flat block.
  auto locate = [&](int coll, const TensorSlice& s, int op, size_t k) -> int64_t {
    const int64_t pos = slice_position(P, coll, s);
    if (pos >= 0) return pos;
    throw InputError(op_path(op) + ".slices[" + std::to_string(k) + "]",
                     "is not part of the slices of collective " + std::to_string(coll));
  };
  // Spans between a store and collective `coll`'s flat buffer, for the slices of op `op`.
  auto spans = [&](int op, int coll, bool pack) {
    std::vector<SymSpan> out;
    const OpPlan& c = plan.ops[coll];
    const int st = pack ? c.source_store : c.dest_store;
    const Store& store = plan.stores[st];
    const auto slices = P.slices(P.ops[op]);
    for (int j = 0; j < store.blocks; ++j) {
      for (size_t k = 0; k < slices.size(); ++k) {
        const auto& s = slices[k];
        if (s.shard_numel == 0) continue;
        SymSpan sp;
        sp.count = s.shard_numel;
        Location store_loc{st, -1, false, store.element_index(s.param, j, s.shard_offset)};
        Location buf_loc{-1, coll, !pack, j * c.block_count + locate(coll, s, op, k)};
        sp.src = pack ? store_loc : buf_loc;
        sp.dst = pack ? buf_loc : store_loc;
        // Merge with the previous span when both sides continue it.
        if (!out.empty()) {
          SymSpan& prev = out.back();
          auto same = [](const Location& a, const Location& b, int64_t n) {
            return a.store == b.store && a.op == b.op && a.out == b.out && a.element + n == b.element;
          };
          if (same(prev.src, sp.src, prev.count) && same(prev.dst, sp.dst, prev.count)) {
            prev.count += sp.count;
            continue;
          }
        }
        out.push_back(sp);
      }
    }
    return out;
  };
  // Whether a collective's slices form one contiguous range of store `st`.
  auto contiguous = [&](int i, int st) -> bool {
    const Store& s = plan.stores[st];
    const auto slices = P.slices(P.ops[i]);
    if (s.blocks > 1) {
      int nonempty = 0;
      for (const auto& sl : slices) {
        if (sl.shard_numel == 0) continue;
        ++nonempty;
        if (sl.shard_offset != 0 || sl.shard_numel != s.extent[sl.param]) return false;
      }
      return nonempty == 1;
    }
    int64_t next = -1;
    for (const auto& sl : slices) {
      if (sl.shard_numel == 0) continue;
      const int64_t at = s.element_index(sl.param, 0, sl.shard_offset);
      if (next >= 0 && at != next) return false;
      next = at + sl.shard_numel;
    }
    return true;
  };
  auto first_element = [&](int i, int st) -> int64_t {
    for (const auto& sl : P.slices(P.ops[i]))
      if (sl.shard_numel > 0) return plan.stores[st].element_index(sl.param, 0, sl.shard_offset);
    return 0;
  };

  for (int i = 0; i < nops; ++i) {
    const Op& op = P.ops[i];
    OpPlan& o = plan.ops[i];
    if (op.kind == OpKind::CopyIn) {
      const OpPlan& c = plan.ops[o.collective];
      if (slice_total(P.slices(op)) != c.block_count)
        throw InputError(op_path(i), op_label(P, op) + " copies " + std::to_string(slice_total(P.slices(op))) +
                                         " elements per block but its collective moves " + std::to_string(c.block_count));
      o.pack_spans = spans(i, o.collective, true);
    } else if (op.kind == OpKind::CopyOut) {
      o.unpack_spans = spans(i, o.collective, false);
    } else if (is_collective(op.kind)) {
      const int64_t n = o.blocks, m = o.block_count, w = o.width;
      const int64_t in_elems = op.kind == OpKind::ReduceScatter ? n * m : m;
      const int64_t out_elems = op.kind == OpKind::AllGather ? n * m : m;
      o.moved_bytes = (op.kind == OpKind::AllReduce ? m : n * m) * w;
      if (o.copy_in < 0 && contiguous(i, o.source_store)) {
        o.direct_in = true;
        o.in_loc = Location{o.source_store, -1, false, first_element(i, o.source_store)};
      } else {
        o.in_loc = Location{-1, i, false, 0};
        o.in_bytes = in_elems * w;
        if (o.copy_in < 0) o.pack_spans = spans(i, i, true);
      }
      if (o.copy_outs.empty() && contiguous(i, o.dest_store)) {
        o.direct_out = true;
        o.out_loc = Location{o.dest_store, -1, false, first_element(i, o.dest_store)};
      } else {
        o.out_loc = Location{-1, i, true, 0};
        o.out_bytes = out_elems * w;
        if (o.copy_outs.empty()) o.unpack_spans = spans(i, i, false);
      }
    }
    if (op.kind == OpKind::CopyIn || op.kind == OpKind::CopyOut) {
      int64_t n = 0;
      for (const auto& s : o.pack_spans) n += s.count;
      for (const auto& s : o.unpack_spans) n += s.count;
      o.moved_bytes = n * o.width;
    }
  }

  if (corrupt_op >= 0) {
    if (corrupt_op >= nops) throw InputError("--corrupt-op", "no op " + std::to_string(corrupt_op) + " in the program");
    OpPlan& o = plan.ops[corrupt_op];
    const Op& op = P.ops[corrupt_op];
    if (!o.pack_spans.empty()) o.pack_spans.front().src.element += 1;
    else if (!o.unpack_spans.empty()) o.unpack_spans.front().src.element += 1;
    else if (is_collective(op.kind) && o.direct_in) o.in_loc.element += 1;
    else if (is_collective(op.kind) && o.copy_in >= 0)
      throw InputError("--corrupt-op", op_label(P, op) + " reads the staging buffer its copy-in fills; corrupt that copy-in (op " +
                                           std::to_string(o.copy_in) + ") instead");
    else throw InputError("--corrupt-op", op_label(P, op) + " moves no data; pick a copy or collective op");
  }
  return plan;
}

int64_t slice_position(const Program& program, int coll, const TensorSlice& s) {
  int64_t pos = 0;
  for (const auto& c : program.slices(program.ops[coll])) {
    if (c.param == s.param && c.shard_offset <= s.shard_offset &&
        s.shard_offset + s.shard_numel <= c.shard_offset + c.shard_numel)
      return pos + (s.shard_offset - c.shard_offset);
    pos += c.shard_numel;
  }
  return -1;
}

namespace {

void* location_ptr(const Plan& plan, const Location& l, int width) {
  unsigned char* base = nullptr;
  if (l.store >= 0) base = static_cast<unsigned char*>(plan.stores[l.store].data);
  else base = static_cast<unsigned char*>(l.out ? plan.ops[l.op].out_buf : plan.ops[l.op].in_buf);
  SHARDLINE_CHECK(base, "plan location resolved before allocation");
  return base + l.element * width;
}

std::vector<CopySpan> resolve(const Plan& plan, const std::vector<SymSpan>& spans, int width) {
  std::vector<CopySpan> out;
  out.reserve(spans.size());
  for (const auto& s : spans)
    out.push_back(CopySpan{location_ptr(plan, s.dst, width), location_ptr(plan, s.src, width), s.count * width});
  return out;
}

// fn(begin, end) over [0, n) in contiguous chunks, on up to the machine's hardware threads (one
// per 4 Mi elements at least, so small buffers stay on this thread). The initial values are a
// pure function of their position, and a large model's buffers are billions of elements.
template <class Fn>
void parallel_chunks(int64_t n, Fn fn) {
  constexpr int64_t kMinChunk = int64_t{1} << 22;
  const int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t threads = std::clamp<int64_t>(n / kMinChunk, 1, hardware);
  if (threads == 1) {
    fn(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  const int64_t chunk = (n + threads - 1) / threads;
  const auto run_chunk = [&fn, chunk, n](int64_t t) { fn(std::min(n, t * chunk), std::min(n, (t + 1) * chunk)); };
  int64_t t = 1;
  try {
    for (; t < threads; ++t) pool.emplace_back(run_chunk, t);
  } catch (const std::system_error&) {
    // No more threads (a process or thread limit): this thread does the chunks not started.
  }
  run_chunk(0);
  for (; t < threads; ++t) run_chunk(t);
  for (auto& th : pool) th.join();
}

// At least `bytes` of copies of one encoded value of `width` bytes; a buffer grows (doubling
// copies) only past its largest earlier size, so equal-sized op buffers are filled once.
class RepeatedValue {
 public:
  RepeatedValue(int width, double value) : width_(width) {
    host_.resize(static_cast<size_t>(width));
    encode_value(host_.data(), width, value);
  }
  const unsigned char* at_least(int64_t bytes) {
    SHARDLINE_CHECK(bytes % width_ == 0, "op buffers hold whole elements");
    int64_t filled = static_cast<int64_t>(host_.size());
    if (filled >= bytes) return host_.data();
    host_.resize(static_cast<size_t>(std::max(bytes, 2 * filled)));
    const int64_t size = static_cast<int64_t>(host_.size());
    while (filled < size) {
      const int64_t n = std::min(filled, size - filled) / width_ * width_;
      std::memcpy(host_.data() + filled, host_.data(), static_cast<size_t>(n));
      filled += n;
    }
    return host_.data();
  }

 private:
  int width_;
  std::vector<unsigned char> host_;
};

}  // namespace

void allocate_plan(Plan& plan, Backend& backend) {
  const int rank = plan.rank;
  std::vector<unsigned char> host;
  for (auto& s : plan.stores) {
    s.data = backend.allocate((s.elements + 1) * s.width);
    for (size_t p = 0; p < s.extent.size(); ++p) {
      const int64_t E = s.extent[p];
      const int64_t n = s.blocks * E;
      if (n == 0) continue;
      host.resize(n * s.width);
      parallel_chunks(n, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const double v = initial_value(plan, s, rank, static_cast<int>(p), static_cast<int>(i / E), i % E);
          encode_value(host.data() + i * s.width, s.width, v);
        }
      });
      backend.upload(static_cast<unsigned char*>(s.data) + s.offset[p] * s.width, host.data(), n * s.width);
    }
  }
  host = {};
  std::map<int, RepeatedValue> unwritten;  // by element width
  for (auto& o : plan.ops) {
    for (auto [bytes, buf] : {std::pair{o.in_bytes, &o.in_buf}, std::pair{o.out_bytes, &o.out_buf}}) {
      if (bytes == 0) continue;
      *buf = backend.allocate(bytes + o.width);
      auto it = unwritten.try_emplace(o.width, o.width, kUnwrittenValue).first;
      backend.upload(*buf, it->second.at_least(bytes), bytes);
    }
  }
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    OpPlan& o = plan.ops[i];
    o.pack = resolve(plan, o.pack_spans, o.width);
    o.unpack = resolve(plan, o.unpack_spans, o.width);
    if (is_collective(plan.program.ops[i].kind)) {
      o.in = location_ptr(plan, o.in_loc, o.width);
      o.out = location_ptr(plan, o.out_loc, o.width);
    }
  }
}

void release_plan(Plan& plan, Backend& backend) {
  for (auto& s : plan.stores) {
    if (s.data) backend.release(s.data);
    s.data = nullptr;
  }
  for (auto& o : plan.ops) {
    if (o.in_buf) backend.release(o.in_buf);
    if (o.out_buf) backend.release(o.out_buf);
    o.in_buf = o.out_buf = nullptr;
  }
}

}  // namespace shardline::exec
