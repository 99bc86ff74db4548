// The open report: loads it with core's reader, resolves its trace paths and reloads it on change.
#include "models/report_document.h"

#include "models/format.h"

#include <QDir>
#include <QFileInfo>

#include <exception>

namespace pipeprof::gui {

ReportDocument::ReportDocument(QObject* parent) : QObject(parent) {
  debounce_.setSingleShot(true);
  debounce_.setInterval(250);
  connect(&debounce_, &QTimer::timeout, this, [this] {
    const QFileInfo info(path_);
    // Directory events also fire for trace files written beside the report: reload only when
    // the report itself changed.
    if (!info.exists() || (info.lastModified() == loadedModified_ && info.size() == loadedSize_)) {
      rewatch();
      return;
    }
    reload();
  });
  connect(&watcher_, &QFileSystemWatcher::fileChanged, this, &ReportDocument::onFileEvent);
  connect(&watcher_, &QFileSystemWatcher::directoryChanged, this, &ReportDocument::onFileEvent);
}

bool ReportDocument::open(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  std::shared_ptr<const Report> loaded;
  const QFileInfo info(absolute);
  try {
    loaded = std::make_shared<const Report>(readReport(absolute.toStdString()));
  } catch (const std::exception& error) {
    emit loadFailed(absolute, qs(error.what()));
    return false;
  }
  report_ = std::move(loaded);
  path_ = absolute;
  loadedModified_ = info.lastModified();
  loadedSize_ = info.size();
  rewatch();
  emit reportChanged();
  return true;
}

bool ReportDocument::reload() {
  if (path_.isEmpty()) return false;
  const QFileInfo info(path_);
  try {
    report_ = std::make_shared<const Report>(readReport(path_.toStdString()));
  } catch (const std::exception& error) {
    rewatch();
    emit reloadFailed(qs(error.what()));
    return false;
  }
  loadedModified_ = info.lastModified();
  loadedSize_ = info.size();
  rewatch();
  emit reportChanged();
  return true;
}

QString ReportDocument::resolvePath(const QString& reportPath, const std::string& stored) {
  if (stored.empty()) return {};
  const QString path = qs(stored);
  if (QFileInfo(path).isAbsolute() || reportPath.isEmpty()) return QDir::cleanPath(path);
  return QDir::cleanPath(QFileInfo(reportPath).absoluteDir().filePath(path));
}

void ReportDocument::setWatching(bool watching) {
  watching_ = watching;
  rewatch();
}

void ReportDocument::onFileEvent() {
  if (watching_) debounce_.start();
}

void ReportDocument::rewatch() {
  const QStringList watched = watcher_.files() + watcher_.directories();
  if (!watched.isEmpty()) watcher_.removePaths(watched);
  if (!watching_ || path_.isEmpty()) return;
  // Atomic writes replace the file, which drops it from the watcher; the directory watch sees
  // the rename.
  const QFileInfo info(path_);
  if (info.exists()) watcher_.addPath(path_);
  watcher_.addPath(info.absolutePath());
}

}  // namespace pipeprof::gui
