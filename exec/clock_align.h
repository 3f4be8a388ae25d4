// Aligning the ranks' clocks to rank 0's: each rank ping-pongs with rank 0 and keeps the
// sample with the smallest round trip (Cristian's method): offset = t0_rank0 - midpoint of the
// local send/receive times. The error of that estimate is at most half that round trip.
#pragma once
#include <functional>

namespace shardline::exec {

class HostComm;  // exec/host_comm.h

struct ClockAlignment {
  double offset_us = 0;  // add to a local timestamp to get rank 0's clock
  double error_us = 0;   // bound: half the best round trip (0 on rank 0)
};

// Collective over `host`; `now_us` is the clock the timestamps use.
ClockAlignment align_clocks(const HostComm& host, const std::function<double()>& now_us, int rounds = 32);

}  // namespace shardline::exec
