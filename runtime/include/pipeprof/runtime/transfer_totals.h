// What one rank of a multi-process pipeline moved through its transport.
#pragma once

#include <pipeprof/core/units.h>

#include <cstdint>

namespace pipeprof {

/// Bytes this rank moved through the transport (messages to itself not counted).
struct TransferTotals {
  Bytes sentBytes = 0;
  Bytes receivedBytes = 0;
  std::int64_t messagesSent = 0;
  std::int64_t messagesReceived = 0;
};

}  // namespace pipeprof
