// pipeprof-gui's entry point: opens a report in the window, or renders one view to a PNG and exits.
#include "models/suggest_worker.h"
#include "models/timeline_model.h"
#include "views/main_window.h"
#include "views/suggest_panel.h"
#include "views/tuning_panel.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QEventLoop>
#include <QFileInfo>
#include <QPixmap>
#include <QTextStream>

#include <cstdio>

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitFailure = 1;

bool hasArgument(int argc, char** argv, const char* name) {
  for (int index = 1; index < argc; ++index) {
    if (QString::fromLocal8Bit(argv[index]).startsWith(QLatin1String(name))) return true;
  }
  return false;
}

int fail(int code, const QString& message) {
  QTextStream(stderr) << "pipeprof-gui: error: " << message << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // A screenshot needs no display: render offscreen unless the user chose a platform.
  if (hasArgument(argc, argv, "--screenshot") && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("pipeprof"));
  QApplication::setApplicationName(QStringLiteral("pipeprof-gui"));
  QApplication::setApplicationVersion(QStringLiteral(PIPEPROF_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("Compare predicted and measured pipeline candidates and tune the balance.\n"
                     "Opens a report written by `pipeprof sweep` and reloads it while the sweep writes it."));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                      QStringLiteral("Render the window offscreen to a PNG file and exit."),
                                      QStringLiteral("out.png"));
  const QCommandLineOption view(
      QStringLiteral("view"),
      QStringLiteral("View to show: candidates, accuracy, memory, breakdown, timeline or tuning."),
      QStringLiteral("view"), QStringLiteral("candidates"));
  const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size for --screenshot, WIDTHxHEIGHT."),
                                QStringLiteral("size"), QStringLiteral("1400x900"));
  parser.addOption(screenshot);
  parser.addOption(view);
  parser.addOption(size);
  parser.addPositionalArgument(QStringLiteral("report"), QStringLiteral("A report JSON written by `pipeprof sweep`."),
                               QStringLiteral("[report.json]"));
  parser.process(app);

  const std::optional<pipeprof::gui::MainWindow::View> shown = pipeprof::gui::MainWindow::parseView(parser.value(view));
  if (!shown) {
    return fail(kExitUsage,
                QStringLiteral("unknown view '%1': use candidates, accuracy, memory, breakdown, timeline or tuning")
                    .arg(parser.value(view)));
  }
  const QStringList reports = parser.positionalArguments();
  if (reports.size() > 1)
    return fail(kExitUsage, QStringLiteral("give at most one report (got %1)").arg(reports.size()));

  if (parser.isSet(screenshot)) {
    const QStringList dims = parser.value(size).split(QLatin1Char('x'));
    const int width = dims.size() == 2 ? dims[0].toInt() : 0;
    const int height = dims.size() == 2 ? dims[1].toInt() : 0;
    if (width < 200 || height < 200) {
      return fail(kExitUsage,
                  QStringLiteral("invalid --size '%1': expected WIDTHxHEIGHT, e.g. 1400x900").arg(parser.value(size)));
    }
    if (reports.isEmpty())
      return fail(kExitUsage,
                  QStringLiteral("--screenshot needs a report: pipeprof-gui --screenshot out.png report.json"));
    pipeprof::gui::MainWindow window(pipeprof::gui::MainWindow::Options{false, false});
    window.resize(width, height);
    if (!window.openReport(reports.front())) return fail(kExitUsage, window.lastError());
    window.showView(*shown);
    window.show();
    if (window.timelineModel()->isLoading()) {
      QEventLoop loop;
      QObject::connect(window.timelineModel(), &pipeprof::gui::TimelineModel::loaded, &loop, &QEventLoop::quit);
      loop.exec();
    }
    if (*shown == pipeprof::gui::MainWindow::View::Tuning) {
      // Show the tuning view with the suggestions for the report's own constraints filled in.
      pipeprof::gui::SuggestPanel* panel = window.tuningPanel()->suggestPanel();
      pipeprof::gui::SuggestWorker* worker = panel->worker();
      QEventLoop loop;
      QObject::connect(worker, &pipeprof::gui::SuggestWorker::finished, &loop, &QEventLoop::quit);
      QObject::connect(worker, &pipeprof::gui::SuggestWorker::cancelled, &loop, &QEventLoop::quit);
      QObject::connect(worker, &pipeprof::gui::SuggestWorker::failed, &loop, &QEventLoop::quit);
      panel->startSuggest();
      if (worker->isRunning()) loop.exec();
    }
    for (int pass = 0; pass < 3; ++pass) QApplication::processEvents();
    if (window.size() != QSize(width, height)) {
      QTextStream(stderr) << "pipeprof-gui: note: the window needs at least " << window.width() << "x"
                          << window.height() << "; rendered at that size\n";
    }
    const QString out = parser.value(screenshot);
    if (!window.grab().save(out, "PNG")) {
      return fail(kExitFailure,
                  QStringLiteral("cannot write %1: check that its folder exists and is writable").arg(out));
    }
    return 0;
  }

  pipeprof::gui::MainWindow window;
  window.resize(1400, 900);
  if (!reports.isEmpty()) window.openReport(reports.front());
  window.showView(*shown);
  window.show();
  return QApplication::exec();
}
