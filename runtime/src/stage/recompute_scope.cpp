// The thread-local "recomputing" flag (recompute_scope.h, layer_hooks.h).
#include "stage/recompute_scope.h"

#include <pipeprof/runtime/layer_hooks.h>

namespace pipeprof {
namespace {
thread_local bool tRecomputing = false;
}  // namespace

bool isRecomputing() { return tRecomputing; }

RecomputeScope::RecomputeScope() : previous_(tRecomputing) { tRecomputing = true; }

RecomputeScope::~RecomputeScope() { tRecomputing = previous_; }

}  // namespace pipeprof
