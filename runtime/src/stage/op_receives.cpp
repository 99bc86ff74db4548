// What a compute op receives from other stages (op_receives.h).
#include "stage/op_receives.h"

namespace pipeprof {

std::vector<OpReceive> receivesOf(const Op& op, std::int64_t n, const std::vector<StageSkipRoute>& routes) {
  std::vector<OpReceive> receives;
  const std::int64_t j = op.j;
  if (op.kind == OpKind::Forward) {
    if (j > 0) receives.push_back({OpReceive::What::Activations, j - 1, nullptr});
    for (const StageSkipRoute& route : routes) {
      if (route.popJ == j && route.stashJ != j) receives.push_back({OpReceive::What::Skip, route.stashJ, &route});
    }
  } else if (op.makesInputGradients()) {
    if (j + 1 < n) receives.push_back({OpReceive::What::OutputGradients, j + 1, nullptr});
    for (const StageSkipRoute& route : routes) {
      if (route.stashJ == j && route.popJ != j) receives.push_back({OpReceive::What::SkipGradient, route.popJ, &route});
    }
  }
  return receives;
}

}  // namespace pipeprof
