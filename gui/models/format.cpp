// Text forms of durations, sizes, throughputs and errors for the GUI (wrapping core's units).
#include "models/format.h"

#include <QLocale>

namespace pipeprof::gui {

QString qs(const std::string& text) { return QString::fromStdString(text); }

QString durationText(TimeNs durationNs) { return qs(formatDuration(durationNs)); }

QString bytesText(Bytes bytes) { return qs(formatBytes(bytes)); }

QString throughputText(double samplesPerS) {
  const int decimals = samplesPerS >= 100.0 ? 0 : 1;
  return QLocale::c().toString(samplesPerS, 'f', decimals) + QStringLiteral(" samples/s");
}

QString errorText(double percent) {
  return (percent >= 0 ? QStringLiteral("+") : QString()) + QString::number(percent, 'f', 1) + QStringLiteral(" %");
}

double toMs(TimeNs durationNs) { return static_cast<double>(durationNs) / 1e6; }

double toMiB(Bytes bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

QString scheduleText(ScheduleKind kind, std::int64_t stagesPerDevice) {
  return qs(scheduleLabel(kind, stagesPerDevice));
}

QString trainingStepName(OptimizerKind optimizer, Precision precision) {
  return qs(std::string(optimizerName(optimizer))) + QStringLiteral(", ") + qs(std::string(precisionName(precision)));
}

QString trainingStepText(const OptimizerSpec& optimizer, Precision precision) {
  return qs(describeOptimizer(optimizer)) + QStringLiteral(", ") + qs(std::string(precisionName(precision)));
}

}  // namespace pipeprof::gui
