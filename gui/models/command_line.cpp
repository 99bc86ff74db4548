// The pipeprof command lines that run or sweep a candidate, for copying from the GUI.
#include "models/command_line.h"

#include "models/format.h"

#include <QStringList>

namespace pipeprof::gui {
namespace {

// Quotes an argument for a POSIX shell when it needs it.
QString shellQuote(const QString& argument) {
  static const QString kSafe = QStringLiteral("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/=+@");
  bool safe = !argument.isEmpty();
  for (QChar c : argument) safe = safe && kSafe.contains(c);
  if (safe) return argument;
  QString quoted = argument;
  quoted.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
  return QLatin1Char('\'') + quoted + QLatin1Char('\'');
}

QStringList commonArguments(const ReportEnvironment& environment, const Candidate& candidate, bool sweep) {
  QStringList devices;
  for (const std::string& device : environment.devices) devices << qs(device);
  QStringList args;
  args << QStringLiteral("--model") << shellQuote(environment.model.empty() ? QStringLiteral("MODEL") : qs(environment.model));
  if (!devices.isEmpty()) args << QStringLiteral("--devices") << shellQuote(devices.join(QLatin1Char(',')));
  args << QStringLiteral("--batch") << QString::number(environment.batch > 0 ? environment.batch : candidate.batch);
  // A sweep takes lists (--balances "2,6;4,4", --chunks 2,4); one value each names one candidate.
  args << (sweep ? QStringLiteral("--balances") : QStringLiteral("--balance")) << qs(formatBalance(candidate.balance));
  args << QStringLiteral("--chunks") << QString::number(candidate.chunks);
  args << QStringLiteral("--checkpoint") << qs(std::string(checkpointName(candidate.checkpoint)));
  // The schedule only where it is not the default gpipe (a sweep takes lists: one value each).
  if (candidate.schedule != ScheduleKind::GPipe) {
    args << (sweep ? QStringLiteral("--schedules") : QStringLiteral("--schedule")) << qs(scheduleKindName(candidate.schedule));
    args << QStringLiteral("--stages-per-device") << QString::number(candidate.stagesPerDevice);
  }
  return args;
}

}  // namespace

QString runCommandLine(const ReportEnvironment& environment, const Candidate& candidate) {
  QStringList args{QStringLiteral("pipeprof"), QStringLiteral("run")};
  args << commonArguments(environment, candidate, false) << QStringLiteral("--trace") << QStringLiteral("trace.json");
  return args.join(QLatin1Char(' '));
}

QString sweepCommandLine(const ReportEnvironment& environment, const Candidate& candidate) {
  QStringList args{QStringLiteral("pipeprof"), QStringLiteral("sweep")};
  args << commonArguments(environment, candidate, true) << QStringLiteral("--measure") << QStringLiteral("all")
       << QStringLiteral("-o") << QStringLiteral("report.json");
  return args.join(QLatin1Char(' '));
}

}  // namespace pipeprof::gui
