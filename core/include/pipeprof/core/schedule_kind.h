// The schedule family (gpipe, 1f1b, interleaved, zb1p, interleaved-zb, zbv), its names as users type and read
// them, the stages per device it runs and where it places them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

/// The schedule family: gpipe (all forwards, then all backwards), 1f1b (one forward one
/// backward), interleaved (1F1B over v >= 2 virtual stages per device), and the zero-bubble
/// ones, which split each backward into I (the input's gradient) then W (the weights'):
/// zb1p (ZB-H1, 1F1B's order with W deferred into the cool-down) and interleaved-zb (the same
/// over v >= 2 virtual stages per device; torch's ScheduleInterleavedZeroBubble), and zbv
/// (torch's ScheduleZBVZeroBubble: two stages per device in a V, rank r holding stages r and
/// 2p - 1 - r). Custom is an order given as per-rank actions (torch's CSV, custom_order.h):
/// its placement and stages per device come from the order, which the shape carries.
enum class ScheduleKind { GPipe, OneFOneB, Interleaved, ZeroBubble, InterleavedZeroBubble, ZeroBubbleV, Custom };

/// Every family pipeprof generates, in the order users read them (not Custom: it is read, not
/// searched).
inline constexpr ScheduleKind kScheduleKinds[] = {ScheduleKind::GPipe,
                                                  ScheduleKind::OneFOneB,
                                                  ScheduleKind::Interleaved,
                                                  ScheduleKind::ZeroBubble,
                                                  ScheduleKind::InterleavedZeroBubble,
                                                  ScheduleKind::ZeroBubbleV};

/// Whether the family runs v >= 2 virtual stages per device (interleaved, interleaved-zb, zbv);
/// the others run one.
bool hasVirtualStages(ScheduleKind kind);
/// Whether the family splits each backward into I then W (zb1p, interleaved-zb, zbv; a custom
/// order's own actions say: PipelineShape::splitsBackward).
bool splitsBackward(ScheduleKind kind);

/// The stages per device the family runs when it has no choice: 1 for gpipe, 1f1b and zb1p,
/// 2 for zbv; 0 for interleaved and interleaved-zb, which run any v >= 2, and for custom, whose
/// order says.
std::int64_t fixedStagesPerDevice(ScheduleKind kind);
/// Whether the user picks v (interleaved, interleaved-zb: any v >= 2); the other families fix
/// it, and a custom order by its own stages.
bool choosesStagesPerDevice(ScheduleKind kind);
/// Whether the family runs v stages per device.
bool runsStagesPerDevice(ScheduleKind kind, std::int64_t stagesPerDevice);
/// The v a family runs out of those asked for, increasing: its fixed v whatever was asked, or
/// each asked v >= 2 (interleaved, interleaved-zb).
std::vector<std::int64_t> stagesPerDeviceChoices(ScheduleKind kind, const std::vector<std::int64_t>& asked);

/// Where stage j of n = v p runs. Loop: device j mod p (stages d, d + p, d + 2p, ... on device
/// d). V: the stages go down the devices and back up, so device d holds stages d and
/// 2p - 1 - d (zbv: the first and last stages share device 0, and the turn at stages p - 1,
/// p needs no copy between devices).
enum class StagePlacement { Loop, V };
StagePlacement stagePlacement(ScheduleKind kind);
/// The device of stage j among p under a placement.
std::int64_t placedDevice(StagePlacement placement, std::int64_t j, std::int64_t p);

/// "gpipe", "1f1b", "interleaved", "zb1p", "interleaved-zb", "zbv", "custom". parseScheduleKind
/// throws std::invalid_argument on unknown text ("custom" included: a custom order comes from a
/// file, parseScheduleKindOrCustom reads it where a shape is read back); parseScheduleKindList
/// parses a comma-separated list such as "gpipe,1f1b".
std::string scheduleKindName(ScheduleKind kind);
ScheduleKind parseScheduleKind(const std::string& text);
ScheduleKind parseScheduleKindOrCustom(const std::string& text);
std::vector<ScheduleKind> parseScheduleKindList(const std::string& text);
/// "gpipe, 1f1b, interleaved, zb1p, interleaved-zb or zbv": what an error lists as expected.
std::string scheduleKindChoices();
/// The families' names as a sentence lists them: "zb1p", "zb1p and zbv", "zb1p, interleaved-zb
/// and zbv" (`conjunction` "and"; scheduleKindChoices uses "or").
std::string scheduleKindList(const std::vector<ScheduleKind>& kinds, const std::string& conjunction);

/// The schedule as users read it: "gpipe", "1f1b", "interleaved v2", "zb1p",
/// "interleaved-zb v2", "zbv", "custom" (v named only for the generated families that have a choice).
std::string scheduleLabel(ScheduleKind kind, std::int64_t stagesPerDevice);

}  // namespace pipeprof
