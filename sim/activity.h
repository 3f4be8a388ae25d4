// Progress of one piece of work served at a rate that changes over time, as SimGrid's activities:
// a compute op's microseconds of work on a GPU that slows while collectives run (sim/compute.h),
// a flow's bytes on a link shared max-min (sim/network.h). When its resource's rates change, the
// owner brings `remaining` up to date for the time served at the old rate (advance), then projects
// the end at the new one (project). Each projection gets a new version: an end event carrying an
// older one is stale.
#pragma once
#include <algorithm>
#include <cstdint>

namespace shardline::sim {

struct Activity {
  double remaining = 0;  // work left, in the resource's unit (compute: us of work; network: bytes)
  double since_us = 0;   // when `remaining` was last brought up to date
  double end_us = 0;     // projected end at the current rate
  uint64_t version = 0;

  // `done` units were served since `since_us` (never more than what was left).
  void advance(double now_us, double done) {
    remaining = std::max(0.0, remaining - done);
    since_us = now_us;
  }
  // At the current rate the rest takes `duration_us` from now.
  void project(double now_us, double duration_us, uint64_t new_version) {
    end_us = now_us + duration_us;
    version = new_version;
  }
};

}  // namespace shardline::sim
