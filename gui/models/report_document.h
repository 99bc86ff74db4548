// The open report: loads it with core's reader, resolves its trace paths and reloads it on change.
#pragma once

#include <pipeprof/core/report.h>

#include <QDateTime>
#include <QFileSystemWatcher>
#include <QObject>
#include <QString>
#include <QTimer>

#include <memory>
#include <string>

namespace pipeprof::gui {

/// Holds one report. A failed load never replaces the report that is open. While a report is
/// open its file is watched; a change (a running sweep rewrites it atomically after each
/// candidate) reloads it after a short debounce.
class ReportDocument : public QObject {
  Q_OBJECT

 public:
  explicit ReportDocument(QObject* parent = nullptr);

  /// Reads the report at path. On success replaces the report, starts watching the file and
  /// emits reportChanged(); on failure emits loadFailed(path, reader's message) and keeps the
  /// current report. Returns whether it loaded.
  bool open(const QString& path);
  /// Reads the open file again; on failure emits reloadFailed(message) and keeps the report.
  bool reload();

  bool hasReport() const { return report_ != nullptr; }
  /// The open report (null before the first successful open). Shared so that models can keep
  /// the version they display while a reload replaces it.
  std::shared_ptr<const Report> report() const { return report_; }
  /// Absolute path of the open report; empty when none.
  const QString& path() const { return path_; }
  /// A path stored in the report, resolved: absolute paths as they are, relative ones against
  /// the report's directory. Empty for an empty path.
  QString resolvePath(const std::string& stored) const { return resolvePath(path_, stored); }
  /// The same against any report path (thread-safe).
  static QString resolvePath(const QString& reportPath, const std::string& stored);

  /// Whether file changes reload the report (default on).
  void setWatching(bool watching);
  /// Debounce between a file change and the reload, in milliseconds (default 250).
  void setReloadDelayMs(int delayMs) { debounce_.setInterval(delayMs); }

 signals:
  void reportChanged();
  void loadFailed(const QString& path, const QString& message);
  void reloadFailed(const QString& message);

 private:
  void onFileEvent();
  void rewatch();

  std::shared_ptr<const Report> report_;
  QString path_;
  QDateTime loadedModified_;
  qint64 loadedSize_ = -1;
  bool watching_ = true;
  QFileSystemWatcher watcher_;
  QTimer debounce_;
};

}  // namespace pipeprof::gui
