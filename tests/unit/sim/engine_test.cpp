#include "sim/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

namespace shardline::sim {
namespace {

TEST(Engine, PopsInTimeOrderAndAdvancesTheClock) {
  Engine e;
  e.schedule_at(5.0, 0, 1);
  e.schedule_at(1.0, 0, 2);
  e.schedule_at(3.0, 0, 3);
  Event ev;
  std::vector<int> order;
  std::vector<double> clock;
  while (e.pop(ev)) {
    order.push_back(ev.target);
    clock.push_back(e.now_us());
  }
  EXPECT_EQ(order, (std::vector<int>{2, 3, 1}));
  EXPECT_EQ(clock, (std::vector<double>{1.0, 3.0, 5.0}));
}

TEST(Engine, EqualTimesPopInSchedulingOrder) {
  Engine e;
  for (int i = 0; i < 100; ++i) e.schedule_at(7.0, i % 3, i);
  Event ev;
  int expected = 0;
  while (e.pop(ev)) EXPECT_EQ(ev.target, expected++);
  EXPECT_EQ(expected, 100);
}

TEST(Engine, EventsScheduledWhileRunningKeepTheOrder) {
  Engine e;
  e.schedule_at(1.0, 0, 0);
  e.schedule_at(2.0, 0, 1);
  Event ev;
  ASSERT_TRUE(e.pop(ev));
  e.schedule_at(1.0, 0, 2);  // now: runs before t = 2
  e.schedule_at(2.0, 0, 3);  // same time as target 1, scheduled later: after it
  std::vector<int> order;
  while (e.pop(ev)) order.push_back(ev.target);
  EXPECT_EQ(order, (std::vector<int>{2, 1, 3}));
}

// Events at the current time take a shortcut past the heap; the order must not change: an event
// already in the heap at this time was scheduled first and pops first.
TEST(Engine, EventsAtTheCurrentTimeKeepSchedulingOrderWithTheHeap) {
  Engine e;
  e.schedule_at(1.0, 0, 0);
  e.schedule_at(1.0, 0, 1);
  e.schedule_at(3.0, 0, 2);
  Event ev;
  ASSERT_TRUE(e.pop(ev));
  EXPECT_EQ(ev.target, 0);
  e.schedule_at(1.0, 0, 3);  // now: after 1 (same time, scheduled before it)
  e.schedule_at(1.0, 0, 4);
  ASSERT_TRUE(e.pop(ev));
  EXPECT_EQ(ev.target, 1);
  e.schedule_at(1.0, 0, 5);
  e.schedule_at(2.0, 0, 6);
  std::vector<int> order;
  std::vector<double> clock;
  while (e.pop(ev)) {
    order.push_back(ev.target);
    clock.push_back(e.now_us());
  }
  EXPECT_EQ(order, (std::vector<int>{3, 4, 5, 6, 2}));
  EXPECT_EQ(clock, (std::vector<double>{1.0, 1.0, 1.0, 2.0, 3.0}));
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.events_processed(), 7u);
}

TEST(Engine, ReArmingATimerMovesItsEventInsteadOfAddingOne) {
  Engine e;
  const int timer = e.add_timer();
  e.set_timer(timer, 10.0, 0, 1, /*version=*/1);
  e.schedule_at(5.0, 0, 2);
  e.set_timer(timer, 3.0, 0, 1, 2);  // earlier
  e.set_timer(timer, 7.0, 0, 1, 3);  // later again
  Event ev;
  std::vector<std::pair<int, uint64_t>> popped;
  std::vector<double> clock;
  while (e.pop(ev)) {
    popped.emplace_back(ev.target, ev.version);
    clock.push_back(e.now_us());
  }
  EXPECT_EQ(popped, (std::vector<std::pair<int, uint64_t>>{{2, 0}, {1, 3}}));  // no stale event
  EXPECT_EQ(clock, (std::vector<double>{5.0, 7.0}));
  EXPECT_EQ(e.events_processed(), 2u);
}

TEST(Engine, AReArmedTimerTiesAsAFreshEvent) {
  Engine e;
  const int timer = e.add_timer();
  e.set_timer(timer, 4.0, 0, 1);
  e.schedule_at(4.0, 0, 2);
  e.set_timer(timer, 4.0, 0, 1);  // same time, now scheduled after target 2
  Event ev;
  std::vector<int> order;
  while (e.pop(ev)) order.push_back(ev.target);
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
}

// Against the lazy scheme it replaces (every arming a fresh event, stale ones skipped by version):
// the same events pop in the same order at the same times, over random schedules in which popped
// events re-project timers, to later times or to now.
TEST(Engine, TimersPopWhatLazyCancellationWouldHaveKept) {
  using Popped = std::tuple<int, int, double>;  // kind, target, time
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::pair<int, double>> plain;  // (target, time) of the plain events
    std::vector<double> first_arm;              // each timer's first time
    for (int t = 0; t < 8; ++t) first_arm.push_back(std::uniform_int_distribution<int>(1, 20)(rng));
    for (int k = 0; k < 20; ++k) plain.emplace_back(100 + k, std::uniform_int_distribution<int>(1, 20)(rng));

    auto run = [&](bool with_timers) {
      Engine e;
      std::vector<int> timers;
      std::vector<uint64_t> current(8, 0);
      uint64_t version = 0;
      auto arm = [&](int t, double at) {
        current[static_cast<size_t>(t)] = ++version;
        if (with_timers) e.set_timer(timers[static_cast<size_t>(t)], at, 1, t, version);
        else e.schedule_at(at, 1, t, version);
      };
      for (int t = 0; t < 8; ++t) timers.push_back(e.add_timer());
      for (int t = 0; t < 8; ++t) arm(t, first_arm[static_cast<size_t>(t)]);
      for (const auto& [target, at] : plain) e.schedule_at(at, 0, target);
      std::vector<Popped> out;
      Event ev;
      while (e.pop(ev)) {
        if (ev.kind == 1 && ev.version != current[static_cast<size_t>(ev.target)]) continue;  // stale
        out.emplace_back(ev.kind, ev.target, e.now_us());
        if (ev.kind == 0 && ev.target % 3 != 1) {
          // A plain event re-projects two timers, as a collective starting or ending does.
          for (int t : {ev.target % 8, (ev.target / 3) % 8})
            arm(t, e.now_us() + (ev.target % 2 == 0 ? 0 : 1 + ev.target % 5));
        }
      }
      return out;
    };
    const std::vector<Popped> timed = run(true);
    const std::vector<Popped> lazy = run(false);
    ASSERT_FALSE(timed.empty());
    ASSERT_EQ(timed, lazy) << "round " << round;
  }
}

TEST(EngineDeathTest, SchedulingInThePastAborts) {
  Engine e;
  e.schedule_at(5.0, 0, 0);
  Event ev;
  e.pop(ev);
  EXPECT_DEATH(e.schedule_at(4.0, 0, 1), "before now");
}

}  // namespace
}  // namespace shardline::sim
