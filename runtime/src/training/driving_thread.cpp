// The driving thread as SCHED_BATCH while a bound pipeline runs (sched_setscheduler on itself).
#include "training/driving_thread.h"

#include <sched.h>

namespace pipeprof {

DrivingThreadAsBatch::DrivingThreadAsBatch(bool enabled) : enabled_(enabled && sched_getscheduler(0) == SCHED_OTHER) {
  const sched_param parameters{};  // priority 0, the only one SCHED_BATCH takes
  if (enabled_) enabled_ = sched_setscheduler(0, SCHED_BATCH, &parameters) == 0;  // 0: this thread
}

DrivingThreadAsBatch::~DrivingThreadAsBatch() {
  const sched_param parameters{};
  if (enabled_) sched_setscheduler(0, SCHED_OTHER, &parameters);
}

}  // namespace pipeprof
