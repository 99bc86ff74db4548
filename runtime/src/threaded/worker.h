// A worker: one thread per pipeline device running tasks from a queue, in submission order.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace pipeprof {

/// Runs submitted tasks one at a time on its own thread. Tasks must not throw (the pipeline
/// catches every exception and hands it back as a value); a task that does is reported
/// through its future. Given `cpus`, the thread runs on those CPUs alone (its intra-op threads,
/// made later, inherit them); empty, wherever the scheduler puts it.
class Worker {
 public:
  explicit Worker(std::vector<int> cpus = {});
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  std::future<void> submit(std::function<void()> task);

 private:
  void loop(const std::vector<int>& cpus);

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace pipeprof
