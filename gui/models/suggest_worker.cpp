// Runs the simulator's search off the GUI thread, with progress, cancellation and failure as signals.
#include "models/suggest_worker.h"

#include "models/format.h"

#include <pipeprof/simulator/predictor.h>

#include <QMetaObject>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

namespace pipeprof::gui {

SuggestWorker::SuggestWorker(QObject* parent) : QObject(parent) {}

SuggestWorker::~SuggestWorker() {
  if (run_) run_->cancel = true;
  future_.waitForFinished();
}

bool SuggestWorker::start(const Profile& profile, const Cluster& cluster, const SearchSpace& space,
                          const Calibration& calibration) {
  if (running_) return false;
  running_ = true;
  auto run = std::make_shared<Run>();
  run_ = run;
  // The destructor waits for the search, so `self` outlives the worker thread's use of it; the
  // queued delivery is dropped by Qt if the worker is destroyed first.
  SuggestWorker* self = this;
  future_ = QtConcurrent::run([self, run, profile, cluster, space, calibration] {
    SearchResult result;
    QString error;
    try {
      const Predictor predictor(profile, cluster, calibration);
      result = predictor.search(space, [self, run](std::int64_t done, std::int64_t total) {
        if (run->cancel) return false;
        const int percent = total > 0 ? static_cast<int>(done * 100 / total) : 100;
        // Emitted from the pool thread: connections to GUI-thread receivers are queued.
        if (run->lastPercent.exchange(percent) != percent) emit self->progress(done, total);
        return !run->cancel.load();
      });
    } catch (const std::exception& exception) {
      error = qs(exception.what());
    }
    QMetaObject::invokeMethod(self, [self, run, result = std::move(result), error]() mutable {
      self->deliver(run, std::move(result), error);
    }, Qt::QueuedConnection);
  });
  return true;
}

void SuggestWorker::cancel() {
  if (running_ && run_) run_->cancel = true;
}

void SuggestWorker::deliver(const std::shared_ptr<Run>& run, SearchResult result, QString error) {
  if (run != run_) return;  // a stale run (cannot happen while start() refuses overlapping runs)
  running_ = false;
  if (run->cancel || result.cancelled) {
    emit cancelled();
  } else if (!error.isEmpty()) {
    emit failed(error);
  } else {
    result_ = std::move(result);
    emit finished();
  }
}

}  // namespace pipeprof::gui
