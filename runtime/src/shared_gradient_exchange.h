// Between ranks: the gradients of shared parameters (shared_parameters.h), summed once per step.
#pragma once

#include "shared_parameters.h"
#include "stage_messages.h"

#include <vector>

namespace pipeprof {

/// After a step's backward on rank `rank`: sends the gradients of this rank's copies to every
/// other rank holding a copy of the same parameters (one message per peer: the gradients
/// flattened and joined, in `shared`'s order, under tag(SharedGradient, rank)), receives
/// theirs, and writes to each own copy's gradient the sum of all copies' in device order, the
/// same bits on every rank. A rank holding no copy of a parameter sends and waits for nothing
/// for it. Throws what the mailbox throws (a peer gone, a timeout).
void exchangeSharedGradients(Mailbox& mailbox, const MessageTags& tags, const std::vector<SharedParameter>& shared,
                             int rank);

}  // namespace pipeprof
