// Metrics history for trend tracking: one JSON object per line (scenario, metrics, git commit,
// UTC ISO 8601 time, backend), appended by `shardline track`, rendered as a self-contained
// HTML page of per-scenario overlap-efficiency, step-time and peak-memory trends.
#pragma once
#include <string>
#include <vector>

#include "core/metrics.h"

namespace shardline {

struct HistoryRecord {
  std::string scenario;
  Metrics metrics;
  std::string commit;    // git commit the metrics were produced at
  std::string time_utc;  // "2026-01-31T12:00:00Z"
  std::string backend;   // "sim" | "mpi" | "nccl"
};

std::string history_record_to_line(const HistoryRecord& record);  // one JSON line, no newline
// Appends one line (creating the file). Throws InputError("--history", ...) when the path is a
// directory or another non-regular file, or unwritable; an existing file is read first and a
// malformed line refused as read_history does, leaving the file untouched.
void append_history(const std::string& path, const HistoryRecord& record);
// Every record in file order; throws InputError("<path>:<line>", ...) on a malformed line and
// InputError("--history", ...) when the path is missing, a directory or not a regular file.
std::vector<HistoryRecord> read_history(const std::string& path);

std::string utc_now_iso8601();

// Self-contained HTML: per scenario, overlap efficiency, step time and peak allocated memory (with
// the latest record's GPU memory as a line; records without memory leave no point) against the
// record sequence (hover: commit, time, backend).
std::string history_html(const std::vector<HistoryRecord>& records);

}  // namespace shardline
