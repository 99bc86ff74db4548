// Runs the simulator's search off the GUI thread, with progress, cancellation and failure as signals.
#pragma once

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/simulator/search.h>

#include <QFuture>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

namespace pipeprof::gui {

/// Lives in the GUI thread; each start() runs one pipeprof::search() on the Qt thread pool.
/// Signals arrive in the GUI thread: progress(done, total) while it runs (throttled to about
/// one per percent), then exactly one of finished() (result() holds the search result),
/// cancelled() (no result), or failed(message) (e.g. an inconsistent search space).
/// Destroying the worker cancels a running search and waits for it.
class SuggestWorker : public QObject {
  Q_OBJECT

 public:
  explicit SuggestWorker(QObject* parent = nullptr);
  ~SuggestWorker() override;

  /// Starts a search; returns false (and does nothing) while one is running.
  /// Searches with Predictor(profile, cluster, calibration): the predictions of the report
  /// and of `pipeprof suggest --calibration`.
  bool start(const Profile& profile, const Cluster& cluster, const SearchSpace& space,
             const Calibration& calibration = {});
  /// Asks the running search to stop; cancelled() follows. No effect when idle.
  void cancel();
  bool isRunning() const { return running_; }
  /// The last finished search (empty before the first).
  const SearchResult& result() const { return result_; }

 signals:
  void progress(qint64 done, qint64 total);
  void finished();
  void cancelled();
  void failed(const QString& message);

 private:
  struct Run {
    std::atomic<bool> cancel{false};
    std::atomic<int> lastPercent{-1};
  };
  void deliver(const std::shared_ptr<Run>& run, SearchResult result, QString error);

  std::shared_ptr<Run> run_;
  QFuture<void> future_;
  bool running_ = false;
  SearchResult result_;
};

}  // namespace pipeprof::gui
