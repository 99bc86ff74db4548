// Sweep progress on stderr: one updating bar on a terminal, plain lines otherwise.
#include "progress_reporter.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>

namespace pipeprof::cli {
namespace {

std::string clockText(double seconds) {
  const auto whole = static_cast<std::int64_t>(seconds + 0.5);
  return fmt::format("{}:{:02}", whole / 60, whole % 60);
}

}  // namespace

ProgressReporter::ProgressReporter(std::ostream& out, bool interactive, std::int64_t total)
    : out_(out), interactive_(interactive), total_(total), start_(std::chrono::steady_clock::now()) {}

bool ProgressReporter::stderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

void ProgressReporter::setTotal(std::int64_t total) {
  total_ = total;
  if (!measuringStart_) measuringStart_ = std::chrono::steady_clock::now();
}

void ProgressReporter::phase(const std::string& message) {
  if (interactive_ && lineOpen_) out_ << "\r\033[K";
  lineOpen_ = false;
  out_ << message << "\n" << std::flush;
}

void ProgressReporter::begin(const std::string& label) {
  current_ = label;
  stepText_.clear();
  if (interactive_) {
    redraw();
    return;
  }
  out_ << "measuring " << label << " ...\n" << std::flush;  // a log shows what runs (or hangs)
}

void ProgressReporter::step(std::int64_t done, std::int64_t steps) {
  stepText_ = fmt::format("step {}/{}", done, steps);
  if (interactive_) redraw();
}

void ProgressReporter::measured(const std::string& label, TimeNs measuredNs, TimeNs predictedNs) {
  ++done_;
  if (interactive_) {
    redraw();
    return;
  }
  out_ << fmt::format("measured {}/{} {}: {} (predicted {}) {}\n", done_, total_, label, formatDuration(measuredNs),
                      formatDuration(predictedNs), timing())
       << std::flush;
}

void ProgressReporter::roundDone(const std::string& label, TimeNs medianSoFarNs) {
  ++done_;
  if (interactive_) {
    redraw();
    return;
  }
  out_ << fmt::format("partly measured {}/{} {}: {} so far {}\n", done_, total_, label, formatDuration(medianSoFarNs),
                      timing())
       << std::flush;
}

void ProgressReporter::failed(const std::string& label, const std::string& error) {
  ++done_;
  if (interactive_ && lineOpen_) out_ << "\r\033[K";
  lineOpen_ = false;
  out_ << fmt::format("failed {}/{} {}: {}\n", done_, total_, label, error) << std::flush;
  if (interactive_) redraw();
}

void ProgressReporter::finish() {
  if (interactive_ && lineOpen_) out_ << "\n" << std::flush;
  lineOpen_ = false;
}

std::string ProgressReporter::timing() const {
  const auto now = std::chrono::steady_clock::now();
  std::string text = "[elapsed " + clockText(std::chrono::duration<double>(now - start_).count());
  if (done_ > 0 && done_ < total_) {
    const double measuring = std::chrono::duration<double>(now - measuringStart_.value_or(start_)).count();
    text +=
        ", about " + clockText(measuring / static_cast<double>(done_) * static_cast<double>(total_ - done_)) + " left";
  }
  return text + "]";
}

void ProgressReporter::redraw() {
  constexpr std::int64_t kWidth = 24;
  const std::int64_t filled = total_ > 0 ? std::min(kWidth, done_ * kWidth / total_) : kWidth;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  std::string line = fmt::format("[{}] {}/{} {}", bar, done_, total_, timing());
  if (done_ < total_ && !current_.empty()) line += " " + current_;
  if (!stepText_.empty() && done_ < total_) line += " " + stepText_;
  out_ << "\r\033[K" << line << std::flush;
  lineOpen_ = true;
}

}  // namespace pipeprof::cli
