// The transport's tag space, written once: a step's messages (MessageTags, ranks/stage_messages.h)
// take the tags below kControlTagBase; the control messages around the steps take those above.
#pragma once

#include <cstdint>

namespace pipeprof {

constexpr std::uint32_t kControlTagBase = 1u << 30;
/// Aligning the ranks' clocks (rank_training.cpp): the pings and their replies, then (+1) the
/// offset rank 0 sends each rank.
constexpr std::uint32_t kClockTag = kControlTagBase;
/// Whether a flag holds on any rank (rank_training.cpp): each rank's flag to rank 0, then (+1)
/// rank 0's answer.
constexpr std::uint32_t kAnyRankTag = kControlTagBase + 2;
/// The link benchmark's ping-pong (link_benchmark.cpp).
constexpr std::uint32_t kPingTag = kControlTagBase + 16;

}  // namespace pipeprof
