// Tests for the event queue: (time, sequence) order.
#include "event_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace pipeprof::sim {
namespace {

TEST(EventQueue, OrdersByTimeThenSequence) {
  EventQueue queue;
  queue.push(30, 0);
  queue.push(10, 1);
  queue.push(20, 2);
  queue.push(10, 3);
  queue.push(10, 4);
  queue.push(5, 5);
  std::vector<std::uint32_t> order;
  while (!queue.empty()) order.push_back(queue.pop().op);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{5, 1, 3, 4, 2, 0}));
}

TEST(EventQueue, ClearKeepsWorking) {
  EventQueue queue;
  for (std::uint32_t k = 0; k < 100; ++k) queue.push(100 - k, k);
  queue.clear();
  EXPECT_TRUE(queue.empty());
  queue.push(7, 9);
  EXPECT_EQ(queue.top().timeNs, 7);
  EXPECT_EQ(queue.pop().sequence, 0u);
}

}  // namespace
}  // namespace pipeprof::sim
