// A worker: one thread per pipeline device running tasks from a queue, in submission order.
#include "threaded/worker.h"

#include <pthread.h>
#include <sched.h>

namespace pipeprof {

namespace {

/// Keeps the calling thread on `cpus` (indices below CPU_SETSIZE: the Pipe checks them); where
/// the kernel refuses the mask (no CPU of it in this process's cpuset), the thread stays where
/// it was: binding only steadies the timing.
void keepOnCpus(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int cpu : cpus) CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

}  // namespace

Worker::Worker(std::vector<int> cpus) : thread_([this, cpus = std::move(cpus)] { loop(cpus); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  thread_.join();
}

std::future<void> Worker::submit(std::function<void()> task) {
  std::packaged_task<void()> packaged(std::move(task));
  std::future<void> done = packaged.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(packaged));
  }
  ready_.notify_one();
  return done;
}

void Worker::loop(const std::vector<int>& cpus) {
  keepOnCpus(cpus);
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) {
        return;
      }
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace pipeprof
