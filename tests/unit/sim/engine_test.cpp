#include "sim/engine.h"

#include <gtest/gtest.h>

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

TEST(EngineDeathTest, SchedulingInThePastAborts) {
  Engine e;
  e.schedule_at(5.0, 0, 0);
  Event ev;
  e.pop(ev);
  EXPECT_DEATH(e.schedule_at(4.0, 0, 1), "before now");
}

}  // namespace
}  // namespace shardline::sim
