// Text forms of durations, sizes, throughputs and errors for the GUI (wrapping core's units).
#pragma once

#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/core/units.h>

#include <QString>

#include <cstdint>
#include <string>

namespace pipeprof::gui {

/// A std::string from core as a QString (UTF-8).
QString qs(const std::string& text);
/// "4.56 ms" (core's formatDuration).
QString durationText(TimeNs durationNs);
/// "1.50 GiB" (core's formatBytes).
QString bytesText(Bytes bytes);
/// "1,234.5 samples/s".
QString throughputText(double samplesPerS);
/// Signed percentage: "+4.2 %", "-12.0 %".
QString errorText(double percent);
/// The schedule of a candidate: "gpipe", "1f1b", "interleaved v2" (v is written only for
/// interleaved, the one family with more than one stage per device).
QString scheduleText(ScheduleKind kind, std::int64_t stagesPerDevice);
/// The training step: "adamw (lr 0.001, weight decay 0.01, betas 0.9,0.999), bf16".
QString trainingStepText(const OptimizerSpec& optimizer, Precision precision);
/// The training step in short: "adamw, bf16".
QString trainingStepName(OptimizerKind optimizer, Precision precision);
/// Milliseconds as a double (charts plot step times in ms).
double toMs(TimeNs durationNs);
/// Mebibytes as a double.
double toMiB(Bytes bytes);

}  // namespace pipeprof::gui
