// Shared CLI flags for the schedule of one candidate or of a search, and the schedule's labels.
#include "schedule_options.h"

#include "commands.h"

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/custom_order.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace pipeprof::cli {
namespace {

/// "2" -> 2; nullopt-like -1 for text that is not a whole number.
std::int64_t parseCount(const std::string& text) {
  std::size_t used = 0;
  std::int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return -1;
  }
  return used == text.size() && !text.empty() ? value : -1;
}

/// "0,1" -> {0, 1}: --deferred-weights, comma-separated counts (0 allowed).
std::vector<std::int64_t> parseDeferredWeights(const std::string& text) {
  std::optional<std::vector<std::int64_t>> counts = parseCountList(text, 0);
  if (!counts) {
    throw UsageError(
        fmt::format("--deferred-weights {}: expected one count per device, comma-separated, e.g. 0,1", text));
  }
  return std::move(*counts);
}

ScheduleKind parseScheduleOrThrow(const std::string& flag, const std::string& text) {
  try {
    return parseScheduleKind(text);
  } catch (const std::invalid_argument&) {
    throw UsageError(fmt::format("{} {}: unknown schedule; expected {}", flag, text, scheduleKindChoices()));
  }
}

/// The fix for an interleaved shape error: chunk counts that are multiples of p.
std::string chunkHint(std::int64_t devices) {
  return fmt::format("give --chunks a multiple of {} (the devices), e.g. {} or {}", devices, devices, 2 * devices);
}

}  // namespace

void addScheduleFlags(CLI::App& command, ScheduleFlags& flags) {
  command
      .add_option("--schedule", flags.schedule,
                  "gpipe (all forwards, then all backwards), 1f1b (one forward one backward), interleaved "
                  "(1F1B over several stages per device), zb1p (zero bubble: 1F1B with each backward split into "
                  "input and weight gradients, the weights' deferred into the bubbles), interleaved-zb (zero "
                  "bubble over several stages per device) or zbv (zero bubble with two stages per device in a V: "
                  "device d holds stages d and 2p-1-d)")
      ->capture_default_str()
      ->type_name("KIND");
  command
      .add_option("--stages-per-device", flags.stagesPerDevice,
                  "Stages per device v: the balance has devices x v entries, stage j on device j mod devices "
                  "(zbv: device d holds stages d and 2 x devices - 1 - d) (default: 1, or 2 with --schedule "
                  "interleaved, interleaved-zb or zbv)")
      ->type_name("V");
  command
      .add_option("--deferred-weights", flags.deferredWeights,
                  "zb1p: how many W's each device defers, device d between 0 and d (its k-th W runs after its "
                  "(k + E_d)-th I), e.g. 0,0; fewer keep less memory where a W keeps more than the forward "
                  "(default: d on device d, torch's order; `pipeprof suggest` and the sweep pick the most within "
                  "1F1B's memory)")
      ->type_name("E0,E1,...");
}

void addScheduleFileFlag(CLI::App& command, ScheduleFlags& flags) {
  command
      .add_option("--schedule-file", flags.scheduleFile,
                  "Run this order instead of a generated schedule: torch.distributed.pipelining's action CSV (one row "
                  "per rank, e.g. 0F0,0F1,0B0,0B1; `pipeprof schedule export` writes one). Row r is device r; each "
                  "stage runs on the row holding its actions; the micro-batches are the chunks")
      ->type_name("ORDER.csv")
      ->excludes("--schedule")
      ->excludes("--stages-per-device")
      ->excludes("--deferred-weights")
      ->excludes("--chunks");
}

void applyScheduleFlags(const ScheduleFlags& flags, PipelineShape& shape) {
  if (!flags.scheduleFile.empty()) {
    try {
      runCustomOrder(shape, readCustomOrder(flags.scheduleFile));
    } catch (const std::invalid_argument& error) {
      throw UsageError(fmt::format("--schedule-file {}", error.what()));
    }
    return;
  }
  const ScheduleKind kind = parseScheduleOrThrow("--schedule", flags.schedule);
  if (!flags.deferredWeights.empty()) {
    if (kind != ScheduleKind::ZeroBubble) {
      throw UsageError(fmt::format("--deferred-weights {}: only zb1p defers its W's by a count per device, not "
                                   "--schedule {}; drop --deferred-weights or add --schedule zb1p",
                                   flags.deferredWeights, flags.schedule));
    }
    shape.deferredWeights = parseDeferredWeights(flags.deferredWeights);
  }
  if (flags.stagesPerDevice.empty()) {
    shape.schedule = kind;
    shape.stagesPerDevice = choosesStagesPerDevice(kind) ? 2 : fixedStagesPerDevice(kind);
    return;
  }
  const std::int64_t v = parseCount(flags.stagesPerDevice);
  if (v < 1) {
    throw UsageError(fmt::format("--stages-per-device {}: give a positive count (1 for gpipe, 1f1b and zb1p, 2 or "
                                 "more for interleaved and interleaved-zb)",
                                 flags.stagesPerDevice));
  }
  if (!hasVirtualStages(kind) && v != 1) {
    throw UsageError(fmt::format("--stages-per-device {}: --schedule {} runs one stage per device; add --schedule "
                                 "{} for {} stages per device, or drop --stages-per-device",
                                 flags.stagesPerDevice, flags.schedule,
                                 splitsBackward(kind) ? "interleaved-zb" : "interleaved", v));
  }
  if (kind == ScheduleKind::ZeroBubbleV && v != 2) {
    throw UsageError(fmt::format("--stages-per-device {}: --schedule zbv runs exactly 2 stages per device (device d "
                                 "holds stages d and 2p-1-d); drop --stages-per-device or use --schedule "
                                 "interleaved-zb for {}",
                                 flags.stagesPerDevice, v));
  }
  if (hasVirtualStages(kind) && v < 2) {
    throw UsageError(fmt::format("--stages-per-device {}: --schedule {} needs at least 2 stages per device "
                                 "(one stage per device is --schedule {})",
                                 flags.stagesPerDevice, flags.schedule, splitsBackward(kind) ? "zb1p" : "1f1b"));
  }
  shape.schedule = kind;
  shape.stagesPerDevice = v;
}

void checkScheduleShape(const PipelineShape& shape, std::int64_t batch, std::int64_t devices,
                        const std::string& devicesText) {
  const std::vector<std::int64_t>& balance = shape.balance;
  const std::int64_t n = shape.stages();
  const std::int64_t v = shape.stagesPerDevice;
  if (shape.order) {
    const std::string schedule = "the order of --schedule-file " + shape.order->source;
    if (devices > 0 && shape.order->devices() != devices) {
      throw UsageError(fmt::format("{} has {} ranks (one row each) but {} names {} device{}: give as many", schedule,
                                   shape.order->devices(), devicesText, devices, devices == 1 ? "" : "s"));
    }
    if (n != shape.order->stages()) {
      throw UsageError(fmt::format("--balance {} has {} stages but {} runs {}: give {} entries", formatBalance(balance),
                                   n, schedule, shape.order->stages(), shape.order->stages()));
    }
    checkScheduleShape(shape, batch, shape.order->devices());
    return;
  }
  const std::string perDevice =
      v == 1 ? "one stage per device" : fmt::format("{} stages per device (--stages-per-device {})", v, v);
  const std::string schedule = "--schedule " + scheduleKindName(shape.schedule);
  if (devices > 0 && n != devices * v) {
    throw UsageError(fmt::format("--balance {} has {} stages but {} names {} device{} and {} runs {}: give "
                                 "{} entries ({} x {})",
                                 formatBalance(balance), n, devicesText, devices, devices == 1 ? "" : "s", schedule,
                                 perDevice, devices * v, devices, v));
  }
  if (n % v != 0) {
    throw UsageError(fmt::format("--balance {} has {} stages, not a multiple of {}: {} runs {}", formatBalance(balance),
                                 n, v, schedule, perDevice));
  }
  checkScheduleShape(shape, batch, n / v);
}

void checkScheduleShape(const PipelineShape& shape, std::int64_t batch, std::int64_t devices) {
  const std::int64_t chunks = shape.chunks;
  if (batch < 1 || chunks < 1 || devices < 1) return;  // reported by the callers' own checks
  const std::string deferred = deferredWeightsError(shape.schedule, devices, shape.deferredWeights);
  if (!deferred.empty()) {
    throw UsageError(fmt::format("--deferred-weights {}: {}", formatBalance(shape.deferredWeights), deferred));
  }
  const MicroBatching split = microBatching(batch, chunks);
  const std::string error =
      scheduleShapeError(shape.schedule, shape.stagesPerDevice, devices * shape.stagesPerDevice, split.count);
  if (error.empty()) return;
  const std::string exists = split.count == chunks
                                 ? std::string()
                                 : fmt::format(" (batch {} in chunks of {} samples makes only {} micro-batches)", batch,
                                               split.chunkSize, split.count);
  throw UsageError(fmt::format("--chunks {}{}: {}; {}", chunks, exists, error, chunkHint(devices)));
}

void applyScheduleListFlags(const ScheduleListFlags& flags, SearchSpace& space) {
  std::vector<ScheduleKind> kinds;
  try {
    kinds = parseScheduleKindList(flags.schedules);
  } catch (const std::invalid_argument& error) {
    throw UsageError(
        fmt::format("--schedules {}: {}; give a comma-separated list of them", flags.schedules, error.what()));
  }
  std::vector<std::int64_t> vs;
  try {
    vs = parseBalance(flags.stagesPerDevice);  // comma-separated positive counts
  } catch (const std::invalid_argument&) {
    throw UsageError(fmt::format("--stages-per-device {}: expected comma-separated positive counts, e.g. 1,2",
                                 flags.stagesPerDevice));
  }
  std::sort(vs.begin(), vs.end());
  vs.erase(std::unique(vs.begin(), vs.end()), vs.end());
  const auto interleaved =
      std::find_if(kinds.begin(), kinds.end(), [](ScheduleKind kind) { return choosesStagesPerDevice(kind); });
  const bool anyV2 = std::any_of(vs.begin(), vs.end(), [](std::int64_t v) { return v >= 2; });
  if (interleaved != kinds.end() && !anyV2) {
    const std::string name = scheduleKindName(*interleaved);
    if (kinds.size() == 1) {
      throw UsageError(fmt::format("--stages-per-device {}: --schedules {} needs a count of 2 or more, "
                                   "e.g. --stages-per-device 2",
                                   flags.stagesPerDevice, name));
    }
    // Interleaved among others with only v = 1: it contributes nothing; say so rather than
    // silently searching fewer schedules than asked.
    throw UsageError(fmt::format("--stages-per-device {}: {} (in --schedules {}) needs a count of 2 or more; "
                                 "add one (e.g. --stages-per-device 1,2) or drop {}",
                                 flags.stagesPerDevice, name, flags.schedules, name));
  }
  space.schedules = kinds;
  space.stagesPerDevice = vs;
}

void addCandidateFlags(CLI::App& command, CandidateFlags& flags, const std::string& balanceHelp) {
  command.add_option("--balance", flags.balance, balanceHelp)->required()->type_name("LIST");
  command.add_option("--chunks", flags.chunks, "Micro-batches per mini-batch")->capture_default_str()->type_name("M");
  command.add_option("--checkpoint", flags.checkpoint, "always | except_last | never")
      ->capture_default_str()
      ->type_name("MODE");
  addScheduleFlags(command, flags.schedule);
  addScheduleFileFlag(command, flags.schedule);
}

Candidate candidateFromFlags(const CandidateFlags& flags, std::int64_t batch) {
  Candidate candidate;
  candidate.balance = parseFlag("--balance", [&] { return parseBalance(flags.balance); });
  candidate.checkpoint = parseFlag("--checkpoint", [&] { return parseCheckpoint(flags.checkpoint); });
  candidate.batch = batch;
  candidate.chunks = flags.chunks;
  applyScheduleFlags(flags.schedule, candidate);  // a --schedule-file sets the chunks
  if (candidate.chunks < 1) {
    throw UsageError("--chunks " + std::to_string(candidate.chunks) + ": give a positive chunk count");
  }
  if (candidate.chunks > batch) {
    throw UsageError(fmt::format("{} {} exceeds --batch {}: every micro-batch needs at least one sample",
                                 candidate.order ? "the micro-batches of --schedule-file" : "--chunks",
                                 candidate.chunks, batch));
  }
  checkScheduleShape(candidate, batch, 0, "");
  return candidate;
}

}  // namespace pipeprof::cli
