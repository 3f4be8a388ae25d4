// The executor's memory plan for one rank: the Program scaled by --scale, a data store per
// buffer of the Program's buffer table, each op's flat staging buffers, which copy-in feeds
// which collective and which copy-out drains it (the Program's links), and the copy spans each
// op performs. Built once before any pass; the runner and the verifier read it.
//
// Layout: a store holds, per parameter (in parameter order), `blocks` x `extent` payload
// elements; single-block stores (shards) concatenate the parameters, so a fused bucket whose
// slices follow each other is one contiguous range (zero-copy reads it directly).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/program.h"
#include "exec/backend.h"

namespace shardline::exec {

// A buffer of the Program's buffer table, as this rank holds it.
struct Store {
  int buffer = -1;                    // index into Program::buffers
  int width = 4;                      // payload element width in bytes
  int blocks = 1;
  std::vector<int64_t> extent;        // per param: elements per block
  std::vector<int64_t> offset;        // per param: first element in the store
  int64_t elements = 0;
  void* data = nullptr;               // backend memory, set by allocate_plan()
  int64_t element_index(int param, int block, int64_t local) const {
    return offset[param] + static_cast<int64_t>(block) * extent[param] + local;
  }
};

// Never produced by param_value / grad_value or their sums: what an unwritten element holds.
inline constexpr double kUnwrittenValue = -100;

// The ranks of `rank`'s group of pattern `group` (the Program's group table), in index order.
std::vector<int> group_members(const GroupInfo& group, int rank);

// A place in a store (store >= 0) or in an op's flat buffer (op >= 0; out: its output buffer),
// counted in payload elements.
struct Location {
  int store = -1;
  int op = -1;
  bool out = false;
  int64_t element = 0;
};

struct SymSpan {
  Location dst, src;
  int64_t count = 0;
};

struct OpPlan {
  int width = 4;
  int source_store = -1;   // collectives and copies: where data comes from (-1: op buffer)
  int dest_store = -1;     // where data ends up (-1: op buffer)
  int blocks = 1;          // collective: group size n
  int64_t block_count = 0; // collective: elements per rank block (sum of slice numels)
  int collective = -1;     // copy-in / copy-out: the collective it fills / drains (Op::link)
  int copy_in = -1;        // collective: its copy-in op, -1 for none
  std::vector<int> copy_outs;
  bool direct_in = false;  // collective reads straight from its source store
  bool direct_out = false; // collective writes straight into its destination store
  int64_t in_bytes = 0, out_bytes = 0;  // op buffers (0 when direct)
  void* in_buf = nullptr;
  void* out_buf = nullptr;
  int64_t moved_bytes = 0; // copies: bytes copied; collectives: nccl-tests size S actually used
  std::vector<SymSpan> pack_spans;    // copy-in, or a collective's own pack when not direct
  std::vector<SymSpan> unpack_spans;  // copy-out, or a collective's own unpack when not direct
  Location in_loc, out_loc;           // collective: where its input / output live
  std::vector<CopySpan> pack;         // resolved by allocate_plan
  std::vector<CopySpan> unpack;
  const void* in = nullptr;      // collective arguments once allocated
  void* out = nullptr;
};

struct Plan {
  Program program;          // scaled
  int64_t scale = 1;
  int rank = 0;
  std::vector<Store> stores;
  std::vector<OpPlan> ops;
  int64_t total_bytes() const;
  int store_of_buffer(int buffer) const;  // -1 when no op uses it
};

// Divides every parameter, shard and slice by `scale` (ceil of each boundary, so slices that
// partition a shard still do). Compute durations are kept.
Program scale_program(const Program& program, int64_t scale);

// Builds the plan for `rank` (no memory yet). `corrupt_op` >= 0 shifts that op's first source
// read by one element (test hook). Throws InputError("program...") for inconsistent Programs.
Plan make_plan(const Program& program, int64_t scale, int rank, int world, int corrupt_op = -1);

// Position (in elements) of slice `s` inside the flat rank block of collective `coll`, or -1.
int64_t slice_position(const Program& program, int coll, const TensorSlice& s);

// What element `local` of `param`'s block `block` of `store` holds on `rank` before any op
// writes it, from its buffer's `init` (core/program.h BufferInit; exec/payload.h values).
double initial_value(const Plan& plan, const Store& store, int rank, int param, int block, int64_t local);

// Allocates stores and op buffers on the backend, fills the stores with their initial values
// (exec/payload.h) and resolves every copy span and collective pointer.
void allocate_plan(Plan& plan, Backend& backend);
void release_plan(Plan& plan, Backend& backend);

}  // namespace shardline::exec
