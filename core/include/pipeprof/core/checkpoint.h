// The checkpoint mode: which micro-batches are recomputed in backward instead of kept.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pipeprof {

/// always: every micro-batch is checkpointed; except_last: all but the last; never: none.
enum class Checkpoint { Always, ExceptLast, Never };

/// Every mode, in the order above (menus, searches over all of them).
inline constexpr Checkpoint kAllCheckpoints[] = {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never};

/// "always", "except_last", "never".
std::string_view checkpointName(Checkpoint mode);

/// Parses "always" | "except_last" | "never". Throws std::invalid_argument naming the text
/// and the accepted values.
Checkpoint parseCheckpoint(std::string_view text);

/// Parses a comma-separated list such as "always,never".
std::vector<Checkpoint> parseCheckpointList(std::string_view text);

/// Number of checkpointed micro-batches out of m (torchgpipe's checkpoint_stop): micro-batch
/// i is checkpointed when i < checkpointStop. Zero when not training (eval or no grad).
std::int64_t checkpointStop(Checkpoint mode, std::int64_t m, bool training);

}  // namespace pipeprof
