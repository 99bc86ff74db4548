// Fuzzes torch's schedule CSV reader and --schedule-file's checks: an input loads or is refused
// with the reader's FormatError; what loads writes back to text that reads the same; and a
// loaded order is accepted or refused by makeCustomOrder and Schedule::build with
// std::invalid_argument only (a broken rule, a cyclic wait), never anything else.
#include <pipeprof/core/custom_order.h>
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/schedule_csv.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

/// Orders past this many actions or micro-batches are read but not expanded: Schedule::build
/// is linear in the ops, and the rules are what is fuzzed here, not the expansion's size.
constexpr std::int64_t kMaxExpanded = 4096;

void checkAndExpand(pipeprof::RankActions ranks) {
  std::size_t actions = 0;
  for (const auto& row : ranks) actions += row.size();
  std::shared_ptr<const pipeprof::CustomOrder> order;
  try {
    order = pipeprof::makeCustomOrder(std::move(ranks), "order.csv");
  } catch (const std::invalid_argument&) {
    return;  // a broken rule, named
  }
  if (static_cast<std::int64_t>(actions) > kMaxExpanded || order->microBatches > kMaxExpanded) return;
  pipeprof::ScheduleSpec spec;
  spec.balance.assign(static_cast<std::size_t>(order->stages()), 1);
  pipeprof::runCustomOrder(spec, order);
  try {
    const pipeprof::Schedule schedule = pipeprof::Schedule::build(spec);
    if (pipeprof::scheduleActions(schedule) != order->ranks) std::abort();  // it runs what was written
  } catch (const std::invalid_argument&) {
    // a cyclic wait, named
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  pipeprof::RankActions ranks;
  try {
    ranks = pipeprof::readScheduleCsv(text, "order.csv");
  } catch (const pipeprof::FormatError&) {
    return 0;  // refused with the reader's message, as it must be
  }
  if (pipeprof::readScheduleCsv(pipeprof::writeScheduleCsv(ranks), "written.csv") != ranks) std::abort();
  checkAndExpand(std::move(ranks));
  return 0;
}
