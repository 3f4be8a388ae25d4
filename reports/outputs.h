// The standard output folder of a run (simulate or exec): metrics.json, program.json,
// timeline.json, trace.json, report.html; and the summary table printed on the terminal.
#pragma once
#include <string>

#include "core/metrics.h"
#include "core/program.h"
#include "core/scenario.h"
#include "core/timeline.h"

namespace shardline {

// Writes every file into a temporary sibling folder first and renames it into place, so an
// error never leaves a partial output folder behind. An existing DIR is replaced file by file.
void write_run_outputs(const std::string& dir, const Scenario& scenario, const Program& program,
                       const Timeline& timeline, const Metrics& metrics);

// The human summary table (step time, forward/backward split, compute busy, comm busy and
// collectives, ops and bytes per kind, exposed comm, overlap efficiency, throughput: tokens/s
// global and per GPU, samples/s, model TFLOP/s per GPU, MFU, HFU, each "n/a" with the missing
// scenario key when unknown; peak memory allocated and reserved (estimate) against capacity).
std::string summary_table(const Scenario& scenario, const Timeline& timeline, const Metrics& metrics);

}  // namespace shardline
