// Running a sweep: validating the --vary paths against the base scenario JSON, and evaluating
// grid points (copy JSON, apply overrides, parse, schedule, simulate, metrics) on worker
// threads. No file I/O per point. Splitting across MPI ranks lives in sweep/sweep_mpi.h.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reports/sweep.h"

namespace shardline {

// Checks each path against the base JSON as apply_overrides would (an unknown key gets its
// suggestion), before any value is read, so a misspelled path is named as such and not as a value
// the path's type cannot take. Throws InputError("--vary", ...).
void check_vary_paths(const nlohmann::json& base_json, const std::vector<std::string>& paths);

// Applies every value of every axis to a copy of the base JSON with apply_overrides; an unknown
// path or a value it rejects throws InputError("--vary", ...) naming the path.
void validate_vary_paths(const nlohmann::json& base_json, const std::vector<SweepAxis>& axes);

// Refuses, before the grid runs, a base scenario no configuration can fix: the grid's first and
// last points are both refused, for the same reason, at a JSON path no axis varies (an unknown
// key, a bad value elsewhere). A reason at or around a varied path stays a row (docs/sweep.md).
// Throws InputError("SCENARIO", ...) with that reason.
void check_base_scenario(const nlohmann::json& base_json, const std::string& base_dir, const std::vector<SweepAxis>& axes,
                         size_t points);

// Evaluates one grid point. A combination the parser or scheduler rejects (InputError) gives an
// invalid row carrying the reason; memory fit is judged with the point's own run.memory_margin
// (as simulate judges that scenario).
SweepRow evaluate_sweep_point(const nlohmann::json& base_json, const std::string& base_dir,
                              const std::vector<SweepAxis>& axes, size_t index);

// Called on the calling thread, about ten times a second and once at the end.
using SweepProgressFn = std::function<void(size_t done, size_t total)>;

// Evaluates the grid points `indices` on `jobs` threads (0: all cores). Rows come back in the
// order of `indices`. An internal error (not InputError) in any point is rethrown here.
std::vector<SweepRow> run_sweep_points(const nlohmann::json& base_json, const std::string& base_dir,
                                       const std::vector<SweepAxis>& axes, const std::vector<size_t>& indices,
                                       int jobs, const SweepProgressFn& progress = {});

}  // namespace shardline
