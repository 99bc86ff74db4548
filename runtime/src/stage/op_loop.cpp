// The loop both executors run a pipeline device's ops in.
#include "stage/op_loop.h"

#include <pipeprof/runtime/pipe_error.h>

#include <exception>
#include <vector>

namespace pipeprof {

void runDeviceOps(StageCore& core, const Schedule& schedule, std::int64_t d, const OpLoopHooks& hooks) {
  const std::vector<OpIndex>& order = schedule.deviceOrder(d);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Op& op = schedule.op(order[k]);
    if (hooks.selects && !hooks.selects(op)) continue;
    if (hooks.stopped && hooks.stopped()) return;
    try {
      if (hooks.around) {
        hooks.around(k, op, [&core, &op] { core.run(op); });
      } else {
        core.run(op);
      }
    } catch (const std::exception&) {
      throwPipeError(opLocation(schedule, op), op.j, op.i);
    }
  }
}

}  // namespace pipeprof
