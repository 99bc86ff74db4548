// The threaded Pipe's stage channel: tensors handed over between the workers of one process.
#include "threaded/thread_channel.h"

#include <pipeprof/profiler/host_tracer.h>

#include <optional>

namespace pipeprof {

ThreadChannel::ThreadChannel(const Schedule& schedule, const PipeStreams& streams, HostTracer* tracer,
                             std::vector<std::string> traceDevices)
    : schedule_(schedule),
      streams_(streams),
      tracer_(tracer),
      traceDevices_(std::move(traceDevices)),
      changed_(static_cast<std::size_t>(schedule.stages())) {}

void ThreadChannel::put(const Key& key, Handover handover, std::int64_t receiverJ) {
  std::lock_guard<std::mutex> lock(mutex_);
  slots_[key] = std::move(handover);
  changed_[static_cast<std::size_t>(receiverJ)].notify_one();
}

Handover ThreadChannel::take(const Key& key, std::int64_t j) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_[static_cast<std::size_t>(j)].wait(lock, [&] { return abandoned_ || slots_.count(key) > 0; });
  if (abandoned_) throw StepAborted{};
  auto it = slots_.find(key);
  Handover handover = std::move(it->second);
  slots_.erase(it);  // freed as soon as taken, unless a graph keeps it
  return handover;
}

Handover ThreadChannel::transfer(Handover handover, std::int64_t from, std::int64_t to, CopyDirection direction,
                                 const Op& copy) const {
  std::optional<OpSpan> span;
  if (tracer_ != nullptr && tracer_->enabled()) {
    span.emplace(tracer_, copy.kind, copy.i, copy.j, copy.toJ, traceDevices_.at(static_cast<std::size_t>(to)),
                 "copy " + std::to_string(from) + "->" + std::to_string(to), schedule_.label(copy));
  }
  return streams_.transfer(std::move(handover), from, to, direction);
}

Tensors ThreadChannel::receiveActivations(std::int64_t i, std::int64_t j) {
  Handover incoming = take({Slot::Activations, i, j - 1}, j);
  incoming =
      transfer(std::move(incoming), j - 1, j, CopyDirection::Forward, copyOp(OpKind::Copy, i, j - 1, j, false, -1));
  return streams_.accept(std::move(incoming), j);
}

void ThreadChannel::sendActivations(std::int64_t i, std::int64_t j, const Tensors& outputs) {
  put({Slot::Activations, i, j}, {outputs, streams_.markReady(j)}, j + 1);
}

void ThreadChannel::sendSkip(const StageSkipRoute& route, std::int64_t i, const torch::Tensor& tensor) {
  put({Slot::Skip, i, route.scheduleIndex}, {{tensor}, streams_.markReady(route.stashJ)}, route.popJ);
}

torch::Tensor ThreadChannel::receiveSkip(const StageSkipRoute& route, std::int64_t i) {
  Handover incoming = take({Slot::Skip, i, route.scheduleIndex}, route.popJ);
  incoming = transfer(std::move(incoming), route.stashJ, route.popJ, CopyDirection::Forward,
                      copyOp(OpKind::SkipCopy, i, route.stashJ, route.popJ, false, route.scheduleIndex));
  return streams_.accept(std::move(incoming), route.popJ).front();
}

Tensors ThreadChannel::receiveOutputGrads(std::int64_t i, std::int64_t j) {
  return streams_.accept(take({Slot::OutputGrads, i, j}, j), j);
}

void ThreadChannel::sendInputGrads(std::int64_t i, std::int64_t j, Tensors grads) {
  if (j == 0) {
    // The caller joins the workers' streams before it reads them (inputGrads()).
    put({Slot::InputGrads, i, 0}, {std::move(grads), nullptr}, 0);
    return;
  }
  Handover toPrevious{std::move(grads), streams_.markReady(j)};
  toPrevious =
      transfer(std::move(toPrevious), j, j - 1, CopyDirection::Backward, copyOp(OpKind::Copy, i, j, j - 1, true, -1));
  put({Slot::OutputGrads, i, j - 1}, std::move(toPrevious), j - 1);
}

void ThreadChannel::sendSkipGrad(const StageSkipRoute& route, std::int64_t i, torch::Tensor grad) {
  Handover handover{{std::move(grad)}, streams_.markReady(route.popJ)};
  if (handover.tensors.front().defined()) {
    handover = transfer(std::move(handover), route.popJ, route.stashJ, CopyDirection::Backward,
                        copyOp(OpKind::SkipCopy, i, route.popJ, route.stashJ, true, route.scheduleIndex));
  }
  put({Slot::SkipGrad, i, route.scheduleIndex}, std::move(handover), route.stashJ);
}

torch::Tensor ThreadChannel::receiveSkipGrad(const StageSkipRoute& route, std::int64_t i) {
  return streams_.accept(take({Slot::SkipGrad, i, route.scheduleIndex}, route.stashJ), route.stashJ).front();
}

void ThreadChannel::setOutputGrads(std::vector<Tensors> grads) {
  const std::int64_t last = schedule_.stages() - 1;
  const ReadyEvent produced = streams_.markReady(last);
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    slots_[{Slot::OutputGrads, static_cast<std::int64_t>(i), last}] = {std::move(grads[i]), produced};
  }
  changed_[static_cast<std::size_t>(last)].notify_one();
}

Tensors ThreadChannel::inputGrads(std::int64_t i) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = slots_.find({Slot::InputGrads, i, 0});
  return it == slots_.end() ? Tensors{} : streams_.accept({it->second.tensors, nullptr}, 0);
}

void ThreadChannel::abandon() {
  std::lock_guard<std::mutex> lock(mutex_);
  abandoned_ = true;
  for (auto& changed : changed_) changed.notify_all();
}

bool ThreadChannel::abandoned() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return abandoned_;
}

void ThreadChannel::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  slots_.clear();
}

}  // namespace pipeprof
