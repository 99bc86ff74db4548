// The transport's own threads, scheduled as SCHED_BATCH so that they never interrupt the thread
// that computes.
//
// Gloo's event loop (its device's thread) reads what arrives, answers the peers' notices and
// writes what a send could not. It handles a socket's events only under that socket's pair lock,
// which it tries and, when the computing thread holds it (posting a receive, sending), skips
// until the next wake-up; the socket stays ready, so it wakes at once again. Woken by a message
// while the computing thread holds the lock, the loop thread preempted it (a woken thread does,
// under Linux's fair scheduler) and spun on the lock until its slice ran out, the lock's holder
// waiting for the core behind it: with one core per rank (`--cpu-bind cores`, the default),
// 6-7 ms of a 38-40 ms step of interleaved-zb x8 (docs/performance.md, "Gloo's threads on the
// computing core").
// A SCHED_BATCH thread does not preempt on waking: it runs when the computing thread waits (on
// a message: the moment its data is wanted) or its slice ends, and keeps its fair share when
// another process competes for the core (SCHED_IDLE would starve it). Any thread may choose
// SCHED_BATCH; no privilege is needed. A send that left its message to the loop thread then
// waits for it to run: C10dTransport yields after each send.
#pragma once

#include "environment/process_threads.h"

#include <set>

namespace pipeprof {

/// Moves each of `threads` (thread ids of this process) to SCHED_BATCH, keeping its nice value.
/// Returns how many moved; a thread that ended meanwhile is skipped.
int scheduleAsBatch(const std::set<int>& threads);

/// Calls make(), then schedules the threads it started (present after it and not before; a
/// thread another one started meanwhile counts too) as SCHED_BATCH; returns what make() returned.
template <typename Make>
auto withStartedThreadsAsBatch(Make&& make) {
  const std::set<int> before = processThreadIds();
  auto made = make();
  std::set<int> started;
  for (const int id : processThreadIds()) {
    if (before.count(id) == 0) started.insert(id);
  }
  scheduleAsBatch(started);
  return made;
}

}  // namespace pipeprof
