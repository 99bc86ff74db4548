// Tuning: the profile's layers with their stage, re-simulated on every edit of balance, chunks, mode or schedule.
#include "models/tuning_model.h"

#include "models/format.h"

#include <pipeprof/core/custom_order.h>
#include <pipeprof/simulator/predictor.h>
#include <pipeprof/simulator/search.h>

#include <algorithm>
#include <exception>
#include <numeric>
#include <stdexcept>

namespace pipeprof::gui {

TuningModel::TuningModel(QObject* parent) : QAbstractTableModel(parent) {}

void TuningModel::setInputs(const Profile& profile, const Cluster& cluster, const Candidate& candidate,
                            const Calibration& calibration) {
  SimulationOptions options;
  options.recordTrace = true;
  Predictor predictor(profile, cluster, calibration);
  SimulationResult result = predictor.predict(candidate, options);  // throws on mismatch
  beginResetModel();
  profile_ = profile;
  cluster_ = cluster;
  predictor_ = std::move(predictor);
  candidate_ = candidate;
  edited_ = candidate;
  prediction_ = std::move(result.prediction);
  trace_ = std::move(result.trace);
  endResetModel();
  emit predictionChanged();
}

void TuningModel::clear() {
  beginResetModel();
  profile_.reset();
  cluster_ = {};
  predictor_.reset();
  candidate_ = {};
  edited_ = {};
  prediction_ = {};
  trace_ = {};
  endResetModel();
  emit predictionChanged();
}

std::string TuningModel::shapeError(const Candidate& candidate) const {
  if (candidate.chunks > candidate.batch) {
    return "chunks " + std::to_string(candidate.chunks) + " exceed the mini-batch of " +
           std::to_string(candidate.batch) + " samples: use at most " + std::to_string(candidate.batch) + " chunks";
  }
  if (candidate.chunks < 1 || candidate.batch < 1 || candidate.balance.empty()) return {};  // the simulator explains
  const auto n = static_cast<std::int64_t>(candidate.balance.size());
  return scheduleShapeError(candidate.schedule, candidate.stagesPerDevice, n,
                            microBatching(candidate.batch, candidate.chunks).count);
}

bool TuningModel::apply(const Candidate& candidate) {
  edited_ = candidate;
  if (!profile_) {
    emit invalidEdit(tr("Nothing to tune: open a report with an embedded profile."));
    return false;
  }
  SimulationResult result;
  try {
    if (const std::string error = shapeError(candidate); !error.empty()) throw std::invalid_argument(error);
    SimulationOptions options;
    options.recordTrace = true;
    result = predictor_->predict(candidate, options);
  } catch (const std::exception& error) {
    emit invalidEdit(qs(error.what()));
    return false;
  }
  const bool stagesMoved = candidate.balance != candidate_.balance;
  const bool costsChanged = candidate.chunks != candidate_.chunks;
  candidate_ = candidate;
  prediction_ = std::move(result.prediction);
  trace_ = std::move(result.trace);
  if (!profile_->layers.empty() && (stagesMoved || costsChanged)) {
    emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
  }
  emit predictionChanged();
  return true;
}

bool TuningModel::setBalance(const std::vector<std::int64_t>& balance) {
  Candidate next = edited_;
  next.balance = balance;
  // devices: one per pipeline device, p = n / v; a balance with another p drops the placement.
  if (next.devices.size() * static_cast<std::size_t>(std::max<std::int64_t>(1, next.stagesPerDevice)) !=
      balance.size()) {
    next.devices.clear();
  }
  return apply(next);
}

bool TuningModel::setChunks(std::int64_t chunks) {
  Candidate next = edited_;
  next.chunks = chunks;
  return apply(next);
}

bool TuningModel::setCheckpoint(Checkpoint checkpoint) {
  Candidate next = edited_;
  next.checkpoint = checkpoint;
  return apply(next);
}

bool TuningModel::setSchedule(ScheduleKind schedule, std::int64_t stagesPerDevice) {
  Candidate next = edited_;
  next.schedule = schedule;
  next.order = nullptr;          // a generated family's order is its own
  next.deferredWeights.clear();  // zb1p's default order (torch's) until a suggestion says otherwise
  const std::int64_t fixed = fixedStagesPerDevice(schedule);
  next.stagesPerDevice = fixed == 0 ? std::max<std::int64_t>(2, stagesPerDevice) : fixed;
  // Keep the pipeline devices of the last valid candidate; the stages follow from v.
  const std::int64_t p = candidate_.balance.empty() ? 1 : std::max<std::int64_t>(1, candidate_.pipelineDevices());
  const std::int64_t n = p * next.stagesPerDevice;
  if (!keepOrRebalance(next, n)) {
    edited_ = next;
    emit invalidEdit(tr("%1 with %2 stages per device on %3 devices needs %4 stages, but the model has only %5 layers")
                         .arg(scheduleText(next.schedule, next.stagesPerDevice))
                         .arg(next.stagesPerDevice)
                         .arg(p)
                         .arg(n)
                         .arg(layerCount()));
    return false;
  }
  if (next.devices.size() != static_cast<std::size_t>(p)) next.devices.clear();
  return apply(next);
}

std::int64_t TuningModel::layerCount() const { return profile_ ? profile_->layerCount() : 0; }

bool TuningModel::keepOrRebalance(Candidate& next, std::int64_t stages) const {
  if (static_cast<std::int64_t>(next.balance.size()) == stages) return true;
  if (layerCount() < stages) return false;
  std::vector<double> costs;
  for (TimeNs time : layerTimesNs()) costs.push_back(static_cast<double>(time));
  next.balance = minBottleneckBalance(costs, stages);
  return true;
}

bool TuningModel::setScheduleFile(const QString& path) {
  std::shared_ptr<const CustomOrder> order;
  try {
    order = readCustomOrder(path.toStdString());
  } catch (const std::exception& error) {
    emit invalidEdit(qs(error.what()));
    return false;
  }
  Candidate next = edited_;
  runCustomOrder(next, order);
  if (!keepOrRebalance(next, order->stages())) {
    emit invalidEdit(tr("the order in %1 runs %2 stages, but the model has only %3 layers")
                         .arg(path)
                         .arg(order->stages())
                         .arg(layerCount()));
    return false;
  }
  if (next.devices.size() != static_cast<std::size_t>(order->devices())) next.devices.clear();
  return apply(next);
}

// Moves a boundary of the last valid balance (the one the layer chart draws).
bool TuningModel::moveBoundary(std::int64_t boundary, std::int64_t firstLayer) {
  const auto n = static_cast<std::int64_t>(candidate_.balance.size());
  if (boundary < 0 || boundary >= n - 1) {
    emit invalidEdit(tr("No boundary %1: a balance of %2 stages has boundaries 0..%3").arg(boundary).arg(n).arg(n - 2));
    return false;
  }
  std::vector<std::int64_t> balance = candidate_.balance;
  const auto b = static_cast<std::size_t>(boundary);
  const std::int64_t start =
      std::accumulate(balance.begin(), balance.begin() + static_cast<std::ptrdiff_t>(b), std::int64_t{0});
  const std::int64_t end = start + balance[b] + balance[b + 1];  // the two stages share [start, end)
  if (firstLayer <= start || firstLayer >= end) {
    emit invalidEdit(tr("Stage %1 must start in layers %2..%3 so that both sides keep a layer")
                         .arg(boundary + 1)
                         .arg(start + 1)
                         .arg(end - 1));
    return false;
  }
  balance[b] = firstLayer - start;
  balance[b + 1] = end - firstLayer;
  return setBalance(balance);
}

std::int64_t TuningModel::microBatch() const {
  const std::int64_t chunks = std::max<std::int64_t>(1, candidate_.chunks);
  return (candidate_.batch + chunks - 1) / chunks;
}

std::vector<TimeNs> TuningModel::layerTimesNs() const {
  std::vector<TimeNs> times;
  if (!profile_) return times;
  for (const LayerProfile& layer : profile_->layers) {
    const CostSample cost = layer.costAt(microBatch());
    times.push_back(cost.forwardNs + cost.backwardNs);
  }
  return times;
}

std::vector<Bytes> TuningModel::layerBytes() const {
  std::vector<Bytes> bytes;
  if (!profile_) return bytes;
  for (const LayerProfile& layer : profile_->layers) {
    const CostSample cost = layer.costAt(microBatch());
    bytes.push_back(cost.savedBytes + layer.paramBytes + layer.gradBytes + layer.optimizerBytes);
  }
  return bytes;
}

std::int64_t TuningModel::stageOfLayer(std::int64_t layer) const {
  std::int64_t end = 0;
  for (std::size_t j = 0; j < candidate_.balance.size(); ++j) {
    end += candidate_.balance[j];
    if (layer < end) return static_cast<std::int64_t>(j);
  }
  return -1;
}

int TuningModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !profile_ ? 0 : static_cast<int>(profile_->layers.size());
}

int TuningModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TuningModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const LayerProfile& layer = profile_->layers[static_cast<std::size_t>(index.row())];
  const CostSample cost = layer.costAt(microBatch());
  qlonglong value = 0;
  switch (index.column()) {
    case Layer: value = index.row(); break;
    case StageColumn: value = stageOfLayer(index.row()); break;
    case Forward: value = cost.forwardNs; break;
    case Backward: value = cost.backwardNs; break;
    case Saved: value = cost.savedBytes; break;
    case Params: value = layer.paramBytes; break;
    default: break;
  }
  if (role == ValueRole) return index.column() == Name ? QVariant(qs(layer.name)) : QVariant(value);
  if (role == Qt::TextAlignmentRole) {
    return index.column() == Name ? QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter)
                                  : QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Name: return qs(layer.name);
    case Layer:
    case StageColumn: return value;
    case Forward:
    case Backward: return durationText(value);
    default: return bytesText(value);
  }
}

QVariant TuningModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Layer: return tr("Layer");
    case Name: return tr("Name");
    case StageColumn: return tr("Stage");
    case Forward: return tr("Forward");
    case Backward: return tr("Backward");
    case Saved: return tr("Saved / micro-batch");
    case Params: return tr("Parameters");
    default: return {};
  }
}

}  // namespace pipeprof::gui
