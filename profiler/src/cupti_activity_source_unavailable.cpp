// The activity source of a build without CUPTI: never available, says why, records nothing.
#include <pipeprof/profiler/activity_source.h>

namespace pipeprof {

namespace {

class UnavailableActivitySource final : public ActivitySource {
 public:
  explicit UnavailableActivitySource(CuptiMode mode) : mode_(mode) {}
  bool available() const override { return false; }
  std::string unavailableReason() const override {
    return "CUPTI collector unavailable: pipeprof was built without CUDA/CUPTI (PIPEPROF_WITH_CUPTI)";
  }
  bool start() override { return false; }
  void stop() override {}
  void flush() override {}
  std::vector<ActivityBuffer> takeBuffers() override { return {}; }
  std::int64_t droppedRecords() const override { return 0; }
  void pushExternalCorrelation(std::uint64_t /*externalId*/) override {}
  void popExternalCorrelation() override {}
  ClockSample clockSample(const std::function<std::int64_t()>& hostNowNs) override {
    const std::int64_t now = hostNowNs();
    return ClockSample{now, now};
  }
  CuptiMode mode() const override { return mode_; }
  std::string modeNote() const override { return {}; }

 private:
  CuptiMode mode_;
};

}  // namespace

std::unique_ptr<ActivitySource> makeCuptiActivitySource(CuptiMode mode) {
  return std::make_unique<UnavailableActivitySource>(mode);
}

}  // namespace pipeprof
