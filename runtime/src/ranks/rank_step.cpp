// One training step of one rank: its device's ops in schedule order on the shared stage core.
#include "ranks/rank_step.h"

#include "ranks/shared_gradient_exchange.h"
#include "stage/op_loop.h"

#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/pipe_error.h>

#include <stdexcept>

namespace pipeprof {
RankStep::RankStep(StageCoreConfig core, const RankChannelContext& context, std::vector<Tensors> microBatches,
                   std::vector<torch::Tensor> targets, std::vector<std::int64_t> rows)
    : context_(context),
      channel_(context, std::move(rows)),
      core_(std::move(core), channel_, &channel_, std::move(microBatches), std::move(targets)) {}

void RankStep::run() {
  Mailbox& mailbox = *context_.mailbox;
  const int rank = mailbox.rank();
  ScopedAllocationTag tag(rank);  // a rank's tag is its pipeline device's
  const AutocastScope autocast = core_.autocastFor(rank);
  torch::AutoGradMode gradMode(true);
  const Schedule& schedule = *context_.schedule;
  const std::vector<OpIndex>& order = schedule.deviceOrder(rank);
  OpLoopHooks hooks;
  hooks.around = [&](std::size_t k, const Op&, const std::function<void()>& run) {
    // The next ops' messages may arrive while this one computes (posted receives let the data
    // move as soon as it is sent; a bounded window keeps their buffers few).
    for (std::size_t ahead = k == 0 ? 0 : kReceivesPostedAhead;
         ahead <= kReceivesPostedAhead && k + ahead < order.size(); ++ahead) {
      channel_.postReceivesOf(schedule.op(order[k + ahead]));
    }
    run();
  };
  try {
    runDeviceOps(core_, schedule, rank, hooks);
  } catch (...) {
    mailbox.abandon();
    throw;
  }
  try {
    mailbox.finishSends();
  } catch (const std::exception&) {
    throwPipeError("finishing the step's sends");
  }
  const std::vector<SharedParameter>* shared = core_.config().shared;
  if (shared == nullptr || shared->empty()) return;
  try {
    core_.sumSharedGradients(exchangeSharedGradients(mailbox, *context_.tags, *shared, rank));
  } catch (const std::exception&) {
    mailbox.abandon();
    throwPipeError("summing the shared parameters' gradients");
  }
}

torch::Tensor RankStep::lossSum() const {
  const Tensors values = core_.lossValues();
  if (values.empty() || !values.front().defined()) return {};
  torch::NoGradGuard noGrad;
  return torch::stack(values).sum();
}

}  // namespace pipeprof
