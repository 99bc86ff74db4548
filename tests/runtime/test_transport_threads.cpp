// Tests for transport_threads.cpp: the threads a call starts are found and scheduled as SCHED_BATCH.
#include "transport/transport_threads.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace pipeprof {
namespace {

int currentThreadId() { return static_cast<int>(syscall(SYS_gettid)); }

/// A thread that waits until released, and says its id.
class ParkedThread {
 public:
  ParkedThread()
      : thread_([this] {
          std::unique_lock<std::mutex> lock(mutex_);
          id_ = currentThreadId();
          changed_.notify_all();
          changed_.wait(lock, [this] { return released_; });
        }) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return id_ != 0; });
  }
  ParkedThread(const ParkedThread&) = delete;
  ParkedThread& operator=(const ParkedThread&) = delete;
  ~ParkedThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  int id() const { return id_; }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int id_ = 0;
  bool released_ = false;
  std::thread thread_;
};

TEST(TransportThreads, ListsThisProcessThreads) {
  EXPECT_EQ(processThreadIds().count(currentThreadId()), 1u);
  ParkedThread parked;
  EXPECT_EQ(processThreadIds().count(parked.id()), 1u);
}

TEST(TransportThreads, SchedulesOnlyTheThreadsTheCallStartedAsBatch) {
  ParkedThread before;
  const auto started = withStartedThreadsAsBatch([] { return std::make_unique<ParkedThread>(); });
  ASSERT_NE(started, nullptr);
  EXPECT_EQ(sched_getscheduler(started->id()), SCHED_BATCH);
  EXPECT_EQ(sched_getscheduler(currentThreadId()), SCHED_OTHER) << "the calling thread computes";
  EXPECT_EQ(sched_getscheduler(before.id()), SCHED_OTHER) << "started before the call";
}

TEST(TransportThreads, SkipsThreadsThatAreGone) {
  EXPECT_EQ(scheduleAsBatch({}), 0);
  EXPECT_EQ(scheduleAsBatch({999'999'999}), 0) << "no such thread";
}

}  // namespace
}  // namespace pipeprof
