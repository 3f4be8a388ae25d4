#include "sim/network.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace shardline::sim {
namespace {

[[noreturn]] void broken(const char* what, int slot) {
  std::fprintf(stderr, "shardline sim network: %s (flow slot %d)\n", what, slot);
  std::abort();
}

}  // namespace

Network::Network(const std::array<double, kNumLinkClasses>& capacity_bytes_per_s, double copy_capacity_bytes_per_s) {
  std::copy(capacity_bytes_per_s.begin(), capacity_bytes_per_s.end(), capacity_.begin());
  capacity_[kCopyResource] = copy_capacity_bytes_per_s;
}

bool Network::is_current(int slot, uint64_t version) const {
  return slot >= 0 && slot < static_cast<int>(flows_.size()) && flows_[slot].live && flows_[slot].bytes.version == version;
}

int Network::start_flow(double now_us, LinkClass link, double bytes, int owner) {
  return start(now_us, static_cast<int>(link), bytes, owner);
}

int Network::start_copy_flow(double now_us, double bytes, int owner) { return start(now_us, kCopyResource, bytes, owner); }

int Network::start(double now_us, int resource, double bytes, int owner) {
  if (!(bytes > 0) || !std::isfinite(bytes)) broken("a flow needs a positive, finite byte count", -1);
  if (!(capacity_[resource] > 0)) broken("a flow on a resource without bandwidth", -1);
  advance(now_us);
  int slot;
  if (!free_slots_.empty()) {
    // Reuse the lowest free slot: deterministic and keeps slots dense.
    auto it = std::min_element(free_slots_.begin(), free_slots_.end());
    slot = *it;
    free_slots_.erase(it);
  } else {
    slot = static_cast<int>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[slot];
  f = Flow{};
  f.resource = resource;
  f.owner = owner;
  f.live = true;
  f.bytes.remaining = bytes;
  f.bytes.since_us = now_us;
  live_.insert(std::upper_bound(live_.begin(), live_.end(), slot), slot);
  rerate(now_us);
  return slot;
}

void Network::finish_flow(double now_us, int slot) {
  if (slot < 0 || slot >= static_cast<int>(flows_.size()) || !flows_[slot].live) broken("finishing a flow that is not live", slot);
  advance(now_us);
  Flow& f = flows_[slot];
  // Whatever is left is rounding (the end event fired at the projected end); drop it.
  f.live = false;
  f.bytes.remaining = 0;
  live_.erase(std::find(live_.begin(), live_.end(), slot));
  free_slots_.push_back(slot);
  rerate(now_us);
}

void Network::set_capacity_scale(double now_us, double scale) { set_scale(now_us, capacity_scale_, scale); }
void Network::set_link_scale(double now_us, double scale) { set_scale(now_us, link_scale_, scale); }
void Network::set_copy_scale(double now_us, double scale) { set_scale(now_us, copy_scale_, scale); }

void Network::set_scale(double now_us, double& which, double scale) {
  if (!(scale > 0) || !std::isfinite(scale)) broken("a capacity scale must be positive and finite", -1);
  advance(now_us);
  which = scale;
  rerate(now_us);
}

void Network::advance(double now_us) {
  for (int slot : live_) {
    Flow& f = flows_[slot];
    const double dt_us = now_us - f.bytes.since_us;
    if (dt_us < 0) broken("time went backwards", slot);
    f.bytes.advance(now_us, f.rate * dt_us * 1e-6);
  }
}

void Network::rerate(double now_us) {
  solver_.reset(kNumLinkClasses + 1);
  for (int l = 0; l < kNumLinkClasses; ++l) solver_.set_capacity(l, capacity_[l] * capacity_scale_ * link_scale_);
  solver_.set_capacity(kCopyResource, capacity_[kCopyResource] * capacity_scale_ * copy_scale_);
  for (int slot : live_) solver_.add_flow(flows_[slot].resource);
  solver_.solve();
  for (size_t i = 0; i < live_.size(); ++i) {
    Flow& f = flows_[live_[i]];
    f.rate = solver_.rate(static_cast<int>(i));
    if (!(f.rate > 0)) broken("a live flow got no bandwidth", live_[i]);
    f.bytes.project(now_us, f.bytes.remaining / f.rate * 1e6, next_version_++);
  }
}

}  // namespace shardline::sim
