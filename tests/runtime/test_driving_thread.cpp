// Tests for driving_thread.cpp: the thread driving a bound pipeline's steps is SCHED_BATCH while
// it runs them, and its own policy comes back after.
#include "training/driving_thread.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace pipeprof {
namespace {

TEST(DrivingThread, IsBatchWhileItLivesAndNormalAfter) {
  ASSERT_EQ(sched_getscheduler(0), SCHED_OTHER);
  {
    const DrivingThreadAsBatch batch(true);
    EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH);
  }
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
  {
    const DrivingThreadAsBatch unbound(false);
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "workers not bound: nothing to protect";
  }
}

TEST(DrivingThread, AnIdleCallerKeepsItsPolicy) {
  const sched_param parameters{};
  ASSERT_EQ(sched_setscheduler(0, SCHED_IDLE, &parameters), 0);
  {
    const DrivingThreadAsBatch batch(true);
    EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE);
  }
  EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE);
  ASSERT_EQ(sched_setscheduler(0, SCHED_OTHER, &parameters), 0);
}

}  // namespace
}  // namespace pipeprof
