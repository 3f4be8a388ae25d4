#include "sim/max_min.h"

#include <gtest/gtest.h>

namespace shardline::sim {
namespace {

TEST(MaxMinSolver, TwoFlowsOnOneLinkGetHalfEach) {
  MaxMinSolver s;
  s.reset(1);
  s.set_capacity(0, 100.0);
  const int a = s.add_flow(0);
  const int b = s.add_flow(0);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 50.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 50.0);
}

TEST(MaxMinSolver, LoneFlowGetsTheWholeLink) {
  MaxMinSolver s;
  s.reset(2);
  s.set_capacity(0, 100.0);
  s.set_capacity(1, 7.0);
  const int a = s.add_flow(0);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 100.0);
}

TEST(MaxMinSolver, FlowOnTwoLinksIsLimitedByTheTighter) {
  MaxMinSolver s;
  s.reset(2);
  s.set_capacity(0, 100.0);
  s.set_capacity(1, 30.0);
  const int both[] = {0, 1};
  const int f = s.add_flow(both, 2);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(f), 30.0);
}

TEST(MaxMinSolver, ThreeFlowsWithABottleneck) {
  // Link 0 (cap 10) carries f1 and f2; link 1 (cap 100) carries f2 and f3.
  // Link 0 is the bottleneck: f1 = f2 = 5; f3 takes the rest of link 1: 95.
  MaxMinSolver s;
  s.reset(2);
  s.set_capacity(0, 10.0);
  s.set_capacity(1, 100.0);
  const int f1 = s.add_flow(0);
  const int both[] = {0, 1};
  const int f2 = s.add_flow(both, 2);
  const int f3 = s.add_flow(1);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(f1), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(f2), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(f3), 95.0);
}

TEST(MaxMinSolver, ClassicParkingLot) {
  // Three links of capacity 1 in a row; one long flow crosses all three, one short flow per
  // link. Every link is shared by two flows: everybody gets 1/2.
  MaxMinSolver s;
  s.reset(3);
  for (int r = 0; r < 3; ++r) s.set_capacity(r, 1.0);
  const int all[] = {0, 1, 2};
  const int longf = s.add_flow(all, 3);
  const int s0 = s.add_flow(0), s1 = s.add_flow(1), s2 = s.add_flow(2);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(longf), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(s0), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(s1), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(s2), 0.5);
}

TEST(MaxMinSolver, UnequalBottlenecksFreezeInTurn) {
  // Link 0 (cap 6): a, b, c. Link 1 (cap 2): c, d. Link 1 saturates first at 1 each (c, d);
  // a and b then split what c left on link 0: (6 - 1) / 2 = 2.5.
  MaxMinSolver s;
  s.reset(2);
  s.set_capacity(0, 6.0);
  s.set_capacity(1, 2.0);
  const int a = s.add_flow(0);
  const int b = s.add_flow(0);
  const int cl[] = {0, 1};
  const int c = s.add_flow(cl, 2);
  const int d = s.add_flow(1);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(c), 1.0);
  EXPECT_DOUBLE_EQ(s.rate(d), 1.0);
  EXPECT_DOUBLE_EQ(s.rate(a), 2.5);
  EXPECT_DOUBLE_EQ(s.rate(b), 2.5);
}

TEST(MaxMinSolver, ResetReusesTheSolver) {
  MaxMinSolver s;
  s.reset(1);
  s.set_capacity(0, 100.0);
  s.add_flow(0);
  s.add_flow(0);
  s.solve();
  s.reset(1);
  s.set_capacity(0, 40.0);
  const int a = s.add_flow(0);
  s.solve();
  EXPECT_EQ(s.flow_count(), 1);
  EXPECT_DOUBLE_EQ(s.rate(a), 40.0);
}

TEST(MaxMinSolverDeathTest, FlowWithoutResourcesIsAnError) {
  MaxMinSolver s;
  s.reset(1);
  EXPECT_DEATH(s.add_flow(nullptr, 0), "at least one resource");
}

}  // namespace
}  // namespace shardline::sim
