// The --vary grammar (ranges, lists, joint axes) and the cartesian grid of override points a
// sweep runs: what each point sets, never how it came out (reports/sweep.h ranks the results).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace shardline {

// One --vary axis. Usually one path; a joint axis ("mesh.shard/mesh.replicate=8/4,16/2")
// varies several paths together, one tuple of values per step. `values[i][p]` is the
// override value text (as apply_overrides takes it) of `paths[p]` at step i; sizes are
// already converted to plain byte counts.
struct SweepAxis {
  std::vector<std::string> paths;
  std::vector<std::vector<std::string>> values;
  std::string label() const;  // "policy.bucket_bytes" or "mesh.shard/mesh.replicate"
};

// True when a path's values are sizes (the last key ends in "_bytes", by the naming rule).
bool path_takes_bytes(const std::string& path);

// Expands one value expression of `path`: "a..b:xK" (geometric, K > 1), "a..b:+K"
// (arithmetic, K > 0), or a comma list. Sizes accept units ("1MiB..512MiB:x2"). Other values
// are kept as JSON text (true/false/numbers/strings). Throws InputError("--vary", ...) naming
// the path on an empty range (a > b), a step that never advances (:x1, :+0), or bad numbers.
std::vector<std::string> expand_vary_values(const std::string& path, const std::string& expr);

// The path(s) of one --vary argument, before its values are read: "P1/P2=..." gives {P1, P2}.
std::vector<std::string> parse_vary_paths(const std::string& spec);

// Parses one --vary argument "PATH=EXPR" or "P1/P2=v1/v2,w1/w2" (joint axis, lists only).
SweepAxis parse_vary(const std::string& spec);

// One configuration of the grid: the overrides ("path=value") to apply to the base scenario.
struct SweepPoint {
  size_t index = 0;
  std::vector<std::string> overrides;  // one per path, in axis order
};

// Number of grid points (product of axis sizes); throws InputError("--vary", ...) beyond
// `max_points`.
// The default bound, a million points: every row's metrics are kept for the table, the front and
// the report (hundreds of bytes each), and at a millisecond or more a point a million take a
// quarter of an hour; a grid of 100 million ran out of memory.
size_t grid_size(const std::vector<SweepAxis>& axes, size_t max_points = 1'000'000);
// The point at `index` of the cartesian grid; the LAST axis varies fastest.
SweepPoint grid_point(const std::vector<SweepAxis>& axes, size_t index);
// Index of each axis' value at grid `index`.
std::vector<size_t> grid_coordinates(const std::vector<SweepAxis>& axes, size_t index);

// All axis paths flattened, in axis order (the column names of the settings).
std::vector<std::string> sweep_paths(const std::vector<SweepAxis>& axes);

}  // namespace shardline
