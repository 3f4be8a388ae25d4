// Checks a measured Timeline against the Program it ran: every op appears exactly once per
// rank and iteration, no op starts before it was issued or ends before it starts, ops on one
// stream ran FIFO in program order, and every event dependency was honoured. Comparisons are
// within one rank (one clock), so they are exact up to `slack_us`.
#pragma once
#include <string>
#include <vector>

#include "core/program.h"
#include "core/timeline.h"

namespace shardline::exec {

// Returns one line per violation (empty: the timeline is consistent). `program` is the
// Program that ran (its deps are needed; the Timeline's ops carry none).
std::vector<std::string> check_timeline(const Program& program, const Timeline& timeline, double slack_us = 0.0);

}  // namespace shardline::exec
