// Scheduling the transport's threads as SCHED_BATCH (sched_setscheduler on each thread id).
#include "transport/transport_threads.h"

#include <sched.h>

namespace pipeprof {

int scheduleAsBatch(const std::set<int>& threads) {
  int moved = 0;
  const sched_param parameters{};  // priority 0, the only one SCHED_BATCH takes
  for (const int id : threads) {
    // On Linux a thread id names that one thread; its nice value stays.
    if (sched_setscheduler(id, SCHED_BATCH, &parameters) == 0) ++moved;
  }
  return moved;
}

}  // namespace pipeprof
