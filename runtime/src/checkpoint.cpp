// Checkpointing support: the thread-local "recomputing" flag layers consult during recompute.
#include "checkpoint.h"

namespace pipeprof {
namespace {
thread_local bool tRecomputing = false;
}  // namespace

bool isRecomputing() { return tRecomputing; }

RecomputeScope::RecomputeScope() : previous_(tRecomputing) { tRecomputing = true; }

RecomputeScope::~RecomputeScope() { tRecomputing = previous_; }

}  // namespace pipeprof
