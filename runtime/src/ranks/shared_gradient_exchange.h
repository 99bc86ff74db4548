// Between ranks: the gradients of shared parameters' copies (shared_parameters.h), swapped once per step.
#pragma once

#include "ranks/stage_messages.h"
#include "stage/shared_parameters.h"

#include <vector>

namespace pipeprof {

/// After a step's backward on rank `rank`: sends the gradients of this rank's copies to every
/// other rank holding a copy of the same parameters (one message per peer: the gradients
/// flattened and joined, in `shared`'s order, under tag(SharedGradient, rank)) and returns
/// theirs, for sumSharedGradients. A rank holding no copy of a parameter sends and waits for
/// nothing for it. Throws what the mailbox throws (a peer gone, a timeout).
PeerGradients exchangeSharedGradients(Mailbox& mailbox, const MessageTags& tags,
                                      const std::vector<SharedParameter>& shared, int rank);

}  // namespace pipeprof
